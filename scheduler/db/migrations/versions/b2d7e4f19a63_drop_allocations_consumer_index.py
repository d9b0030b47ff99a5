"""Drop the allocations' index on consumer_uuid alone.

Revision ID: b2d7e4f19a63
Revises: f3c9d2a1b7e4
Create Date: 2026-11-28 17:00:00

The unique constraint on (consumer_uuid, compute_node_id) is an index
that begins with consumer_uuid: every lookup by consumer (is the instance
holding anything, its allocations, their release) uses it as well. The
index on consumer_uuid alone only cost each claim one more B-tree insert
at a random page (a consumer is a random UUID), and after every
checkpoint one more full-page image in the claim's WAL.
"""

from alembic import op

revision = 'b2d7e4f19a63'
down_revision = 'f3c9d2a1b7e4'
branch_labels = None
depends_on = None


def upgrade():
    op.drop_index('ix_allocations_consumer_uuid', table_name='allocations')


def downgrade():
    op.create_index('ix_allocations_consumer_uuid', 'allocations',
                    ['consumer_uuid'])
