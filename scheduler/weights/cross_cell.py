"""CrossCellWeigher: keep a move in its source cell when it can be.

A move that may leave its cell (``requested_destination.cell`` names the
source cell and ``allow_cross_cell_move`` is True) weighs the hosts of
that cell 1 and the others 0; times ``[filter_scheduler]
cross_cell_move_weight_multiplier`` (1e6), a host of the source cell wins
whenever one passed the filters. A request that names no cell weighs
every host 0 (the handler's normalisation then adds nothing). A move that
may not leave its cell never sees other cells' hosts (see
``restrict_candidates`` in the filter scheduler). An aggregate overrides
the multiplier with the metadata key
``cross_cell_move_weight_multiplier``::

    spec.requested_destination = request_spec.Destination(
        cell=request_spec.CellMapping(uuid=source_cell_uuid),
        allow_cross_cell_move=True)
"""

import operator

import numpy as np

from scheduler import weights


def preferred_cell(spec):
    """The uuid of the cell ``spec`` prefers, or None."""
    destination = spec.obj_get('requested_destination')
    if destination is None:
        return None
    cell = destination.obj_get('cell')
    return None if cell is None else cell.obj_get('uuid')


class CrossCellWeigher(weights.BaseHostWeigher):
    """Weighs up the hosts of a move's source cell."""

    pure = True

    multiplier_option = 'cross_cell_move_weight_multiplier'

    def uniform(self, spec):
        # No cell named: every host weighs 0, the weigher does not run.
        return preferred_cell(spec) is None

    def _weigh_object(self, host_state, spec):
        cell_uuid = preferred_cell(spec)
        if cell_uuid is None:
            return 0.0
        return 1.0 if host_state.cell_uuid == cell_uuid else 0.0

    def weigh_all(self, host_table, rows, spec):
        cell_uuid = preferred_cell(spec)
        if cell_uuid is None:
            return np.zeros(len(rows), dtype=np.float64)
        # The rows grouped by cell, kept with the table: one comparison
        # per cell, not a pass over the hosts in Python.
        codes, keys = host_table.grouped(
            'cell_uuid', operator.attrgetter('cell_uuid'))
        in_cell = np.fromiter((key == cell_uuid for key in keys),
                              dtype=np.float64, count=len(keys))
        return in_cell[codes[rows]]
