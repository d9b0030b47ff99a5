"""Cells: where a host's database (and its computes' broker) is.

A cell mapping names one cell database and, optionally, the broker its
computes and conductor speak on. With ``[api_database] connection`` set,
the mappings are rows of the API database (``gantt-manage cell_v2``);
without it, Gantt is one cell on ``[database]``, as it always was, and
:data:`LOCAL` is that cell.

Cell0 (Nova's uuid of zeros) holds the instances that never got a host;
it has no computes, so the scheduler never reads hosts from it.

Code that reads or writes a cell's rows runs inside
``scheduler.db.api.target_cell(cell.database_connection)``.
"""

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
