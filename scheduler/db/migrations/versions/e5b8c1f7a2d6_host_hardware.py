"""Hardware the computes report, and what claims use of it.

Revision ID: e5b8c1f7a2d6
Revises: e1b5a7c30d42
Create Date: 2026-12-16 10:00:00

Six nullable columns on ``compute_nodes``, under Nova's names: the JSON
documents ``cpu_info``, ``numa_topology`` and ``pci_device_pools`` and
the integer ``disk_available_least`` (GiB) come with each inventory
report; ``numa_usage`` and ``pci_usage`` (JSON) are written by claims
only. NULL means not reported (or nothing used), so existing rows need no
value.
"""

from alembic import op
import sqlalchemy as sa

revision = 'e5b8c1f7a2d6'
down_revision = 'e1b5a7c30d42'
branch_labels = None
depends_on = None

# JSON documents are stored as TEXT on every backend (models.JSONText).
JSON_COLUMNS = ('cpu_info', 'numa_topology', 'numa_usage',
                'pci_device_pools', 'pci_usage')


def upgrade():
    with op.batch_alter_table('compute_nodes') as batch:
        for name in JSON_COLUMNS:
            batch.add_column(sa.Column(name, sa.Text(), nullable=True))
        batch.add_column(sa.Column('disk_available_least', sa.Integer(),
                                   nullable=True))


def downgrade():
    with op.batch_alter_table('compute_nodes') as batch:
        batch.drop_column('disk_available_least')
        for name in reversed(JSON_COLUMNS):
            batch.drop_column(name)
