"""Cells: where a host's database (and its computes' broker) is.

A cell mapping names one cell database and, optionally, the broker its
computes and conductor speak on. With ``[api_database] connection`` set,
the mappings are rows of the API database (``gantt-manage cell_v2``);
without it, Gantt is one cell on ``[database]``, as it always was, and
:data:`LOCAL` is that cell.

Cell0 (Nova's uuid of zeros) holds the instances that never got a host;
it has no computes, so the scheduler never reads hosts from it.

Code that reads or writes a cell's rows runs inside
``scheduler.db.api.target_cell(cell.database_connection)``::

    from scheduler import cells

    for cell in cells.get_cells():       # cell0 and disabled cells too
        if cell.is_cell0 or cell.disabled:
            continue
        with db_api.target_cell(cell.database_connection):
            ...
    cells.host_cell('compute1')          # its CellMapping, or None

Both read the API database at most once per ``registry.CACHE_SECONDS``
(and after :func:`clear_cache`, which ``gantt-manage cell_v2`` calls when
it changes a mapping); see :mod:`scheduler.cells.registry`.
"""

import contextlib
import dataclasses

CELL0_UUID = '00000000-0000-0000-0000-000000000000'
CELL0_NAME = 'cell0'


@dataclasses.dataclass(frozen=True)
class CellMapping:
    """One cell: ``database_connection`` None means ``[database]
    connection``, ``transport_url`` None the service's own
    ``[DEFAULT] transport_url``."""

    uuid: str | None
    name: str
    database_connection: str | None = None
    transport_url: str | None = None
    disabled: bool = False

    @property
    def is_cell0(self):
        return self.uuid == CELL0_UUID

    def label(self):
        """How listings show the cell: its name, else its uuid."""
        return self.name or self.uuid or '-'


# The one cell of a deployment without [api_database]: [database] itself.
LOCAL = CellMapping(uuid=None, name='default')


def get_cells():
    """The cells to read hosts from, cell0 and disabled cells included
    (callers skip them): ``[LOCAL]`` without ``[api_database]
    connection``, else the API database's cell mappings.

    :raises exception.ApiDatabaseUnavailable: the API database cannot be
        read (and the cached mappings are too old).
    """
    from scheduler.cells import registry
    return registry.get_cells()


def host_cell(host):
    """The CellMapping of ``host`` from its host mapping, or None if it
    is not mapped (one cell: :data:`LOCAL` if a mapped compute node of
    ``host`` exists)."""
    from scheduler.cells import registry
    return registry.host_cell(host)


def get_cell(uuid):
    """The CellMapping ``uuid`` (:data:`LOCAL` for None, or for any uuid
    without ``[api_database] connection``).

    :raises exception.CellMappingNotFound: no cell has that uuid.
    :raises exception.ApiDatabaseUnavailable: the API database cannot be
        read (and the cached mappings are too old).
    """
    from scheduler.cells import registry
    return registry.get_cell(uuid)


@contextlib.contextmanager
def target(cell):
    """Send this thread's database sessions inside the block to ``cell``'s
    database (a CellMapping; None or :data:`LOCAL` is ``[database]``)."""
    from scheduler.db import api as db_api
    url = None if cell is None else cell.database_connection
    with db_api.target_cell(url):
        yield


def clear_cache():
    """Forget the cached mappings: the next call reads them again."""
    from scheduler.cells import registry
    registry.clear_cache()
