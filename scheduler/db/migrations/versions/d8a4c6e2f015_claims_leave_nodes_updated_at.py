"""The nodes claimed on are found through their allocations.

Revision ID: d8a4c6e2f015
Revises: b2d7e4f19a63
Create Date: 2026-11-28 17:10:00

The usual claim no longer sets the node's ``updated_at`` (indexed): the
host caches find the nodes claimed on since their last refresh by the
``created_at`` of the allocations (indexed here, appended at the index's
end). An UPDATE that changes no indexed column can be a heap-only tuple
update on PostgreSQL, which writes no entry in any of the node's five
indexes: for that the table's pages are now filled to 80%, leaving room
for a new version of a row beside the old. Pages filled before this
migration get that room as their rows move; ``VACUUM FULL compute_nodes``
gives it to all at once (it locks the table while it runs).

While schedulers of the release before run beside these, they find the
claims of the new ones only at their full read (every 300 s): a stale
cache costs a lost claim and a retry, never an overfilled host.
"""

from alembic import op

revision = 'd8a4c6e2f015'
down_revision = 'b2d7e4f19a63'
branch_labels = None
depends_on = None

FILLFACTOR = 80


def upgrade():
    op.create_index('ix_allocations_created_at', 'allocations',
                    ['created_at'])
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('ALTER TABLE compute_nodes SET (fillfactor = %d)'
                   % FILLFACTOR)


def downgrade():
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('ALTER TABLE compute_nodes RESET (fillfactor)')
    op.drop_index('ix_allocations_created_at', table_name='allocations')
