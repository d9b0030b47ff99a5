"""Alembic environment of the API database's schema migrations.

Alembic runs this module for every command; what it does is in
:mod:`scheduler.db.migration_env`. The database is ``[api_database]
connection``; the revision is kept in a table of its own
(``alembic_version_api``), so that the API schema and a cell's schema
may even share one database without reading each other's revision.
"""

from scheduler.db import api as db_api
from scheduler.db import api_models
from scheduler.db import migration_env

VERSION_TABLE = 'alembic_version_api'

migration_env.run(api_models.ApiBase.metadata, db_api.api_engine,
                  db_api.api_connection, version_table=VERSION_TABLE)
