"""Shadow tables: where ``gantt-manage db archive_deleted_rows`` keeps
deleted instances and the migrations that were theirs.

Revision ID: a7c9e1f3b5d7
Revises: d8a4c6e2f015
Create Date: 2026-12-04 09:00:00

``shadow_instances`` and ``shadow_migrations`` have the columns of
``instances`` and ``migrations`` and their primary key, as Nova's shadow
tables do, but no unique constraint, index or foreign key: a row keeps
whatever it held when it was archived, and ``gantt-manage db purge``
deletes them. Types are spelled out, as in the earlier migrations.

On SQLite, ``instances`` and ``migrations`` are rebuilt with
``AUTOINCREMENT``: SQLite otherwise gives a new row the id of the
highest row deleted, and an archived row's id in its shadow table would
come back to the main table and clash with it there on the next
archive. PostgreSQL's sequences and MariaDB's InnoDB counters (kept
across restarts since 10.2) never give an id twice.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'a7c9e1f3b5d7'
down_revision = 'd8a4c6e2f015'
branch_labels = None
depends_on = None

TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')
MYSQL_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def _id():
    # The archived row's own id, copied: never generated here.
    return sa.Column('id', sa.Integer(), nullable=False, autoincrement=False)


def _string(name, length=255, nullable=True):
    return sa.Column(name, sa.String(length), nullable=nullable)


def _timestamps():
    return [sa.Column('created_at', TIMESTAMP, nullable=False),
            sa.Column('updated_at', TIMESTAMP, nullable=True)]


def _create_shadow_instances():
    op.create_table(
        'shadow_instances',
        _id(),
        _string('uuid', 36, nullable=False),
        _string('display_name'),
        _string('project_id'),
        _string('user_id'),
        _string('host'),
        _string('node'),
        _string('vm_state', 32, nullable=False),
        _string('task_state', 32),
        _string('availability_zone'),
        sa.Column('flavor', sa.Text(), nullable=True),
        sa.Column('request_spec', sa.Text(), nullable=True),
        sa.Column('fault', sa.Text(), nullable=True),
        sa.Column('launched_at', TIMESTAMP, nullable=True),
        *_timestamps(),
        sa.Column('deleted_at', TIMESTAMP, nullable=True),
        sa.Column('deleted', sa.Integer(), nullable=False,
                  server_default='0'),
        sa.PrimaryKeyConstraint('id', name='pk_shadow_instances'),
        **MYSQL_OPTIONS)


def _create_shadow_migrations():
    op.create_table(
        'shadow_migrations',
        _id(),
        _string('uuid', 36, nullable=False),
        _string('instance_uuid', 36, nullable=False),
        _string('migration_type', 32, nullable=False),
        _string('status', 32, nullable=False),
        _string('source_host'),
        _string('source_node'),
        _string('dest_host'),
        _string('dest_node'),
        sa.Column('old_flavor', sa.Text(), nullable=True),
        sa.Column('new_flavor', sa.Text(), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_shadow_migrations'),
        **MYSQL_OPTIONS)


def _sqlite_autoincrement(enabled):
    if op.get_bind().dialect.name != 'sqlite':
        return
    for table in ('instances', 'migrations'):
        with op.batch_alter_table(
                table, recreate='always',
                table_kwargs={'sqlite_autoincrement': enabled}):
            pass


def upgrade():
    _create_shadow_instances()
    _create_shadow_migrations()
    _sqlite_autoincrement(True)


def downgrade():
    _sqlite_autoincrement(False)
    op.drop_table('shadow_migrations')
    op.drop_table('shadow_instances')
