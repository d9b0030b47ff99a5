"""A HostTable as Placement's providers: one root provider per row.

:attr:`HostTable.placement <scheduler.host_cache.host_table.HostTable.
placement>` is a :class:`scheduler.resources.candidates.ProviderTable`
whose root ``t`` is the table's row ``t`` (its uuid the node's), built in
bulk from the table's columns and its states' extras (:func:`build`):

* inventories: ``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` from the
  columns (total, reserved, allocation ratio, used; ``min_unit`` 1,
  ``max_unit`` the total, ``step_size`` 1; none of a class whose total
  is 0, as :mod:`scheduler.db.inventories` presents them), and each
  state's ``inventories``;
* traits: each state's ``traits``, and ``COMPUTE_STATUS_DISABLED``
  where its compute service is disabled (Nova's compute_status trait);
* aggregates: the uuids of its host's aggregates;
* children, where ``[filter_scheduler] numa_in_placement`` or
  ``pci_in_placement`` ask for them: its NUMA cells (holding the node's
  ``PCPU`` instead of the root) and its PCI devices
  (:mod:`scheduler.host_cache.host_children`), after every root.

A table derived from another whose placement was built (a claim, a
refresh's rows) derives its own when first asked: the parent's with the
new used amounts (:class:`Deferred`) when only used amounts changed,
else built again::

    placement = table.placement
    ok = placement.acceptable_roots(request)     # bool per row
"""

import threading

import numpy as np

from scheduler.host_cache import host_children
from scheduler.resources import candidates
from scheduler.resources import provider_arrays

# Nova's trait of a node whose compute service is disabled.
DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'
# The classic classes: (the table columns of their total, reserved,
# ratio and used; the HostState attributes of their total and used).
CLASSIC = {
    'VCPU': (('vcpus_total', 'reserved_vcpus', 'cpu_ratio', 'vcpus_used'),
             'vcpus_total', 'vcpus_used'),
    'MEMORY_MB': (('ram_total', 'reserved_ram', 'ram_ratio', 'ram_used'),
                  'total_usable_ram_mb', 'memory_mb_used'),
    'DISK_GB': (('disk_total', 'reserved_disk', 'disk_ratio', 'disk_used'),
                'total_usable_disk_gb', 'local_gb_used'),
}
# A derived placement may carry used changes for this share of the rows
# (or DEFERRED_ROWS rows, whichever is more) before it is built again
# instead.
DEFERRED_SHARE = 4
DEFERRED_ROWS = 64

# Guards a table's placement slot: built outside it, stored only if no
# write came in between (see HostTable.placement).
LOCK = threading.Lock()


def stand_in_uuid(row):
    """The provider uuid of a row whose node has none (or repeats
    another's): unique within a table, stable across the tables derived
    from it."""
    return 'gantt-host-row-%d' % row


def uuids_of(states):
    """The provider uuid of each state: its node's, else a stand-in."""
    uuids = [state.uuid or stand_in_uuid(row)
             for row, state in enumerate(states)]
    if len(set(uuids)) != len(uuids):
        seen = set()
        for row, uuid in enumerate(uuids):
            if uuid in seen:
                uuids[row] = stand_in_uuid(row)
            seen.add(uuids[row])
    return uuids


def build(table):
    """The ProviderTable of ``table`` (see the module's doc)."""
    states = table.states
    count = len(states)
    uuids = uuids_of(states)
    numa, pci = host_children.options()
    kids = []
    if numa or pci:
        for row, state in enumerate(states):
            kids.extend(host_children.of(state, uuids[row], numa, pci))
    parents = np.full(count + len(kids), -1, dtype=np.int64)
    if kids:
        position = {uuid: row for row, uuid in enumerate(uuids)}
        for index, child in enumerate(kids):
            position[child.uuid] = count + index
        parents[count:] = [position[child.parent] for child in kids]
        uuids = uuids + [child.uuid for child in kids]
    return candidates.ProviderTable.from_arrays(
        uuids, parents,
        inventories=_inventories(table, numa, kids),
        traits=_with_children(_traits(table), count, kids),
        aggregates=_aggregates(table))


def _inventories(table, numa=False, kids=()):
    """The InventoryArrays of the classic columns, the states'
    inventories and the children ``kids`` (providers from the table's
    row count on): whole columns for the first, a pass over the states
    that have the others. With ``numa``, a node whose cells hold its PCPU
    shows none on its root."""
    names = list(CLASSIC)
    parts = []
    for index, (columns, _total, _used) in enumerate(CLASSIC.values()):
        total, reserved, ratio, used = (table.columns[name]
                                        for name in columns)
        rows = np.flatnonzero(total > 0)
        parts.append((rows, np.full(len(rows), index), total[rows],
                      reserved[rows], np.ones(len(rows), dtype=np.int64),
                      total[rows], ratio[rows], used[rows]))
    classes = {name: index for index, name in enumerate(names)}
    extra = []

    def index_of(name):
        index = classes.get(name)
        if index is None:
            index = classes[name] = len(names)
            names.append(name)
        return index

    for row, state in enumerate(table.states):
        if state.inventories:
            moved = numa and host_children.numa_shown(state)
            for name, inventory in state.inventories.items():
                if moved and name == host_children.PCPU:
                    continue
                extra.append((row, index_of(name), inventory.total,
                              inventory.reserved, inventory.min_unit,
                              inventory.max_unit, inventory.allocation_ratio,
                              inventory.used, inventory.step_size))
    first = len(table.states)
    for position, child in enumerate(kids, first):
        for name, (total, used) in child.inventory.items():
            extra.append((position, index_of(name), total, 0, 1, total, 1.0,
                          used, 1))
    if extra:
        values = list(zip(*extra))
        parts.append(tuple(
            np.asarray(values[at], dtype=np.float64 if at == 6 else np.int64)
            for at in range(8)))
        steps = np.asarray(values[8], dtype=np.int64)
    else:
        steps = np.empty(0, dtype=np.int64)
    provider, class_index, total, reserved, min_unit, max_unit, ratio, used = (
        np.concatenate([part[at] for part in parts]) for at in range(8))
    classic = len(provider) - len(steps)
    return provider_arrays.InventoryArrays(
        tuple(names), provider, class_index, total, reserved=reserved,
        min_unit=min_unit, max_unit=max_unit,
        step_size=np.concatenate([np.ones(classic, dtype=np.int64), steps]),
        allocation_ratio=ratio, used=used)


def _memberships(codes, keys_names, extra_names=(), extra_rows=None):
    """Memberships of rows grouped by ``codes`` (each group's names
    ``keys_names[code]``, a sequence), plus ``extra_rows`` holding the
    first of ``extra_names``: whole-array operations over the rows."""
    index = {}
    key_indexes = []
    for names in keys_names:
        key_indexes.append([index.setdefault(name, len(index))
                            for name in names])
    lengths = np.fromiter(map(len, key_indexes), dtype=np.int64,
                          count=len(key_indexes))
    flat = np.fromiter((bit for bits in key_indexes for bit in bits),
                       dtype=np.int64, count=int(lengths.sum()))
    starts = np.cumsum(lengths) - lengths
    per_row = lengths[codes] if len(codes) else np.empty(0, np.int64)
    provider = np.repeat(np.arange(len(codes)), per_row)
    ends = np.cumsum(per_row)
    within = np.arange(len(provider)) - np.repeat(ends - per_row, per_row)
    bits = flat[np.repeat(starts[codes], per_row) + within] \
        if len(provider) else np.empty(0, np.int64)
    if extra_rows is not None and len(extra_rows):
        for name in extra_names:
            bit = index.setdefault(name, len(index))
            provider = np.concatenate([provider, extra_rows])
            bits = np.concatenate([bits, np.full(len(extra_rows), bit)])
    return provider_arrays.Memberships(tuple(index), provider, bits)


def _with_children(memberships, first, kids):
    """``memberships`` plus the traits of the children ``kids`` (input
    positions from ``first`` on)."""
    pairs = [(position, name)
             for position, child in enumerate(kids, first)
             for name in sorted(child.traits)]
    if not pairs:
        return memberships
    index = {name: at for at, name in enumerate(memberships.names)}
    bits = [index.setdefault(name, len(index)) for _, name in pairs]
    return provider_arrays.Memberships(
        tuple(index),
        np.concatenate([memberships.provider,
                        np.fromiter((p for p, _ in pairs), np.int64,
                                    len(pairs))]),
        np.concatenate([memberships.index,
                        np.asarray(bits, dtype=np.int64)]))


def _traits_of(state):
    return state.traits


def _traits(table):
    codes, keys = table.grouped('placement_traits', _traits_of)
    return _memberships(codes, [sorted(key) for key in keys],
                        (DISABLED_TRAIT,), np.flatnonzero(table.disabled))


def _aggregates(table):
    codes, groups = table.aggregate_groups()
    return _memberships(codes, [sorted({aggregate.uuid
                                        for aggregate in group})
                                for group in groups])


# -- tables derived from one another ------------------------------------------

def _fixed(state, numa, pci):
    """What of ``state`` its providers show, but for the used amounts."""
    return (host_children.fixed(state, numa, pci), state.uuid,
            state.vcpus_total, state.reserved_vcpus,
            state.cpu_allocation_ratio, state.total_usable_ram_mb,
            state.reserved_memory_mb, state.ram_allocation_ratio,
            state.total_usable_disk_gb, state.reserved_disk_gb,
            state.disk_allocation_ratio, state.traits,
            state.service_disabled,
            tuple(aggregate.uuid for aggregate in state.aggregates),
            tuple((name, inventory[:-1]) for name, inventory
                  in sorted(state.inventories.items())))


def _used(state, uuid, numa, pci):
    """``{provider uuid: {class: used}}`` of the classes ``state``'s
    providers (its root ``uuid`` and its children) have."""
    used = {name: getattr(state, used_attr)
            for name, (_columns, total_attr, used_attr) in CLASSIC.items()
            if getattr(state, total_attr) > 0}
    moved = numa and host_children.numa_shown(state)
    for name, inventory in state.inventories.items():
        if not (moved and name == host_children.PCPU):
            used[name] = inventory.used
    found = {uuid: used}
    if numa or pci:
        found.update(host_children.used(state, uuid, numa, pci))
    return found


class Deferred:
    """A ProviderTable to derive from ``base`` when first asked for: with
    ``changes`` (``{uuid: {class: used}}``) as its used amounts."""

    __slots__ = ('base', 'changes')

    def __init__(self, base, changes):
        self.base = base
        self.changes = changes

    def resolve(self):
        return self.base.with_used(self.changes)


def derived(placement, old_states, new_states):
    """What a table gets as its placement where ``{row: HostState}``
    ``new_states`` replaced ``old_states`` (``{row: HostState}`` or the
    old table's states) of a table whose placement is ``placement`` (a
    ProviderTable, a Deferred or None): a Deferred when only used amounts
    changed, None (built when asked) otherwise."""
    if placement is None:
        return None
    base = placement.base if isinstance(placement, Deferred) else placement
    # Row t of the table is the root of tree t, the first rows of the
    # provider columns: no list of every root per derivation.
    uuids = base.columns.uuids
    numa, pci = host_children.options()
    changes = {}
    for row, state in new_states.items():
        old = old_states[row]
        if old is state:
            continue
        if _fixed(old, numa, pci) != _fixed(state, numa, pci):
            return None
        uuid = uuids.item(row)
        before = _used(old, uuid, numa, pci)
        # Only the classes whose used amount moved: a claim changes a few
        # of a node's classes, and each one patched costs the next
        # request its share of with_used.
        for provider, amounts in _used(state, uuid, numa, pci).items():
            was = before.get(provider, {})
            moved = {name: used for name, used in amounts.items()
                     if was.get(name) != used}
            if moved:
                changes.setdefault(provider, {}).update(moved)
    if isinstance(placement, Deferred):
        if not changes:
            return placement
        merged = dict(placement.changes)
        for provider, amounts in changes.items():
            merged[provider] = dict(merged.get(provider, {}), **amounts)
        if len(merged) > max(DEFERRED_ROWS,
                             len(base.columns.root_rows) // DEFERRED_SHARE):
            return None
        return Deferred(base, merged)
    return Deferred(placement, changes) if changes else placement
