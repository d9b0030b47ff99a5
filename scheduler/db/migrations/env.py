"""Alembic environment of the cell databases' schema migrations.

Alembic runs this module for every command; what it does is in
:mod:`scheduler.db.migration_env`. The database is the one the current
thread targets (``[database] connection`` by default, see
:func:`scheduler.db.api.target_cell`).
"""

from scheduler.db import api as db_api
from scheduler.db import migration_env
from scheduler.db import models

migration_env.run(models.Base.metadata, db_api.get_engine,
                  db_api.targeted_connection)
