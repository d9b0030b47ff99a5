"""The version of each service (Nova's ``services.version``).

Revision ID: e1b5a7c30d42
Revises: c7a2e9d41f03
Create Date: 2026-11-25 10:00:00

Every service records the service version of the code it runs
(``scheduler.version.SERVICE_VERSION``) with its heartbeats, so that
``gantt-status upgrade check`` can tell whether every compute runs a
release the control services can talk to. NULL: a service of a release
before this one, which recorded none.
"""

from alembic import op
import sqlalchemy as sa

revision = 'e1b5a7c30d42'
down_revision = 'c7a2e9d41f03'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('services') as batch:
        batch.add_column(sa.Column('version', sa.Integer(), nullable=True))


def downgrade():
    with op.batch_alter_table('services') as batch:
        batch.drop_column('version')
