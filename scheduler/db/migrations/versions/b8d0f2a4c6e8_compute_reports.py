"""What computes say they run, and the alternates of a build.

Revision ID: b8d0f2a4c6e8
Revises: a7c9e1f3b5d7
Create Date: 2026-12-04 12:00:00

``compute_reports`` keeps each compute's last instance sync (what runs
there, what is still spawning), which ``gantt-manage db check`` compares
with the instances. ``instances.build_alternates`` keeps, while an
instance builds, the alternates its scheduler sent and the hosts tried,
so that a build whose message was lost moves to the next alternate as a
failed spawn does (``shadow_instances`` mirrors the column).
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'b8d0f2a4c6e8'
down_revision = 'a7c9e1f3b5d7'
branch_labels = None
depends_on = None

ALTERNATES_TABLES = ('instances', 'shadow_instances')
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')


def upgrade():
    op.create_table(
        'compute_reports',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('reported_at', TIMESTAMP, nullable=False),
        sa.Column('running', sa.Text(), nullable=True),
        sa.Column('spawning', sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_compute_reports')),
        sa.UniqueConstraint('host', name=op.f('uq_compute_reports_host')))
    existing = sa.inspect(op.get_bind()).get_table_names()
    for table in ALTERNATES_TABLES:
        if table in existing:
            with op.batch_alter_table(table) as batch:
                batch.add_column(sa.Column('build_alternates', sa.Text(),
                                           nullable=True))


def downgrade():
    existing = sa.inspect(op.get_bind()).get_table_names()
    for table in ALTERNATES_TABLES:
        if table in existing:
            with op.batch_alter_table(table) as batch:
                batch.drop_column('build_alternates')
    op.drop_table('compute_reports')
