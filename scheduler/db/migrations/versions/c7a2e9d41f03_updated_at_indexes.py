"""Indexes on the updated_at of compute nodes and services, and on the
services' last heartbeat.

Revision ID: c7a2e9d41f03
Revises: 8b3f6d0e2a91
Create Date: 2026-12-09 10:00:00

The schedulers' host caches read the rows written since their last
refresh (``updated_at >= watermark``); with these indexes that costs what
changed, not a scan of every node and service. They find the dead
services by their last heartbeat (``last_seen_up < now - down time``);
with its index that costs the dead services, not a scan of every one.
"""

from alembic import op

revision = 'c7a2e9d41f03'
down_revision = '8b3f6d0e2a91'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('ix_compute_nodes_updated_at', 'compute_nodes',
                    ['updated_at'])
    op.create_index('ix_services_updated_at', 'services', ['updated_at'])
    op.create_index('ix_services_last_seen_up', 'services',
                    ['last_seen_up'])


def downgrade():
    op.drop_index('ix_services_last_seen_up', table_name='services')
    op.drop_index('ix_services_updated_at', table_name='services')
    op.drop_index('ix_compute_nodes_updated_at', table_name='compute_nodes')
