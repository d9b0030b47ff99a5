"""What a claim took of a node's hardware: pinned CPUs, pages, devices.

Revision ID: f3c9d2a1b7e4
Revises: e5b8c1f7a2d6
Create Date: 2026-12-16 12:00:00

A claim for an instance that asks for NUMA placement or PCI devices
records where it went (``allocations.hardware``, a JSON document: the
NUMA placement and the devices per pool, see ``scheduler.hardware``), so
that releasing the allocation gives back exactly that, and ``gantt-manage
db check`` can compare the node's ``numa_usage`` and ``pci_usage`` with
the sum of its allocations. NULL: the claim took no hardware.
"""

from alembic import op
import sqlalchemy as sa

revision = 'f3c9d2a1b7e4'
down_revision = 'e5b8c1f7a2d6'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('allocations') as batch:
        batch.add_column(sa.Column('hardware', sa.Text(), nullable=True))


def downgrade():
    with op.batch_alter_table('allocations') as batch:
        batch.drop_column('hardware')
