"""Inventories per resource class, node traits, and allocation items.

Revision ID: c3e5a7b9d1f4
Revises: b8d0f2a4c6e8
Create Date: 2026-12-18 12:00:00

``compute_node_inventories`` holds a node's inventory of each resource
class beyond ``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` (which stay in
their ``compute_nodes`` columns): Placement's total, reserved, min_unit,
max_unit, step_size and allocation_ratio, and the ``used`` that claims
keep. ``compute_node_traits`` holds the traits its compute reports.
``allocation_items`` holds what an allocation takes of those classes,
one row per class, so that a claim stays one transaction of conditional
UPDATEs (the node's row, then one inventory row per class) and
``gantt-manage db check`` can compare each ``used`` with a plain SUM.
Existing rows need nothing: a node without inventory rows has only the
classic three, an allocation without items holds only those.
"""

from alembic import op
import sqlalchemy as sa

revision = 'c3e5a7b9d1f4'
down_revision = 'b8d0f2a4c6e8'
branch_labels = None
depends_on = None

MYSQL_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def _int(name):
    return sa.Column(name, sa.Integer(), nullable=False)


def _node_id(table):
    return (_int('compute_node_id'),
            sa.ForeignKeyConstraint(
                ['compute_node_id'], ['compute_nodes.id'],
                ondelete='CASCADE',
                name='fk_%s_compute_node_id_compute_nodes' % table))


def upgrade():
    op.create_table(
        'compute_node_inventories',
        sa.Column('id', sa.Integer(), nullable=False, autoincrement=True),
        *_node_id('compute_node_inventories'),
        sa.Column('resource_class', sa.String(255), nullable=False),
        _int('total'), _int('reserved'), _int('min_unit'), _int('max_unit'),
        _int('step_size'),
        sa.Column('allocation_ratio', sa.Double(), nullable=False),
        _int('used'),
        sa.PrimaryKeyConstraint('id', name='pk_compute_node_inventories'),
        sa.UniqueConstraint(
            'compute_node_id', 'resource_class',
            name='uq_compute_node_inventories_compute_node_id_resource_class'),
        **MYSQL_OPTIONS)
    op.create_table(
        'compute_node_traits',
        sa.Column('id', sa.Integer(), nullable=False, autoincrement=True),
        *_node_id('compute_node_traits'),
        sa.Column('trait', sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_compute_node_traits'),
        sa.UniqueConstraint(
            'compute_node_id', 'trait',
            name='uq_compute_node_traits_compute_node_id_trait'),
        **MYSQL_OPTIONS)
    op.create_index('ix_compute_node_traits_trait', 'compute_node_traits',
                    ['trait'])
    op.create_table(
        'allocation_items',
        sa.Column('id', sa.Integer(), nullable=False, autoincrement=True),
        _int('allocation_id'),
        sa.Column('resource_class', sa.String(255), nullable=False),
        _int('amount'),
        sa.PrimaryKeyConstraint('id', name='pk_allocation_items'),
        sa.UniqueConstraint(
            'allocation_id', 'resource_class',
            name='uq_allocation_items_allocation_id_resource_class'),
        sa.ForeignKeyConstraint(
            ['allocation_id'], ['allocations.id'], ondelete='CASCADE',
            name='fk_allocation_items_allocation_id_allocations'),
        **MYSQL_OPTIONS)


def downgrade():
    op.drop_table('allocation_items')
    op.drop_index('ix_compute_node_traits_trait',
                  table_name='compute_node_traits')
    op.drop_table('compute_node_traits')
    op.drop_table('compute_node_inventories')
