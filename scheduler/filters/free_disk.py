"""The room DiskFilter and AggregateDiskFilter find in the least free disk.

Nova's DiskFilter counts a host's used disk as ``total - free``, where the
free disk is the smaller of ``local_gb - reserved - used`` and the
``disk_available_least`` the compute reports (what its disk really has
left once images are fully grown), and lets a request of ``amount`` GB in
if ``total * ratio - (total - free) >= amount``. When the first term is
the smaller this is the capacity check the claim makes; these functions
add the other bound, for the hosts that report ``disk_available_least``::

    fits = capacity_check & free_disk.least_allows_all(table, ratios, 40)

Example: a 100 GB node with ratio 1.0, 10 GB used and
``disk_available_least`` 30 takes 30 GB more, not 90.
"""

import numpy as np


def least_allows(host_state, ratio, amount):
    """True if ``amount`` GB fits the host's ``disk_available_least``
    bound (always, when it reports none)."""
    least = host_state.disk_available_least
    if least is None or amount <= 0:
        return True
    return room(host_state.total_usable_disk_gb, ratio, least) >= amount


def least_allows_all(host_table, ratios, amount):
    """:func:`least_allows` of every row (``ratios``: a number or a
    column; the table's own ``disk_ratio`` column reads the room the
    table keeps, ``least_disk_room``)."""
    if amount <= 0:
        return np.ones(len(host_table), dtype=np.bool_)
    if ratios is host_table.columns['disk_ratio']:
        return host_table.derived['least_disk_room'] >= amount
    total = host_table.columns['disk_total']
    return ~host_table.columns['has_disk_least'] | (
        room(total, ratios, host_table.columns['disk_least_gb']) >= amount)


def room(total, ratios, least):
    """``total * ratio - (total - least)``, the operations in this order
    wherever the room is computed (so both paths round alike)."""
    return total * ratios - (total - least)
