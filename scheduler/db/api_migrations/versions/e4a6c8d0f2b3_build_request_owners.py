"""API database: build requests carry their owner.

Revision ID: e4a6c8d0f2b3
Revises: c3e5a7b9d1f2
Create Date: 2026-12-03 10:00:00

Which super-conductor process is working on a build request
(``owner``), when it last said so (``updated_at``), and the cell whose
database a build request left behind waits for (``waiting_cell_uuid``):
what lets a super-conductor resume the builds of one that died, and the
builds a cell outage interrupted, without two of them resuming the same
one (see ``conductor/tasks/build_requests.py``). Rows written before this
revision have no owner and are resumed once they are older than the grace
period.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'e4a6c8d0f2b3'
down_revision = 'd4e6f8a0b2c3'
branch_labels = None
depends_on = None

TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')


def upgrade():
    with op.batch_alter_table('build_requests') as batch:
        batch.add_column(sa.Column('owner', sa.String(255), nullable=True))
        batch.add_column(sa.Column('updated_at', TIMESTAMP, nullable=True))
        batch.add_column(sa.Column('waiting_cell_uuid', sa.String(36),
                                   nullable=True))
        batch.create_index('ix_build_requests_owner', ['owner'])


def downgrade():
    with op.batch_alter_table('build_requests') as batch:
        batch.drop_index('ix_build_requests_owner')
        batch.drop_column('waiting_cell_uuid')
        batch.drop_column('updated_at')
        batch.drop_column('owner')
