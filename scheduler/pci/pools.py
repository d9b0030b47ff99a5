"""PCI device pools of a host: which requests fit, and the usage they take.

A compute reports its assignable PCI devices as pools of identical devices
(``compute_nodes.pci_device_pools``)::

    [{"vendor_id": "8086", "product_id": "154d", "numa_node": 0,
      "count": 4, "tags": {"dev_type": "type-VF",
                           "physical_network": "physnet1"}}]

and claims keep how many devices of each pool are taken, keyed by
:func:`pool_key` (``compute_nodes.pci_usage``, ``{key: used}``). A pool
has ``count - used`` free devices. Nothing here changes its arguments::

    delta = pools.allocate(host_pools, usage, requests, numa_cells=(0,))
    if delta is None:
        ...                                  # the host cannot serve them
    usage = pools.apply(usage, delta, host_pools)   # PciDevicesUnavailable
    usage = pools.release(usage, delta)             # if it lost a race

How a request is served follows Nova's PCI stats. A pool can serve a
request if it matches one of the request's specs (every key of the spec
equals the pool's attribute or tag of that name, strings compared without
case), and it is not a PF, vDPA or remote-managed pool the request did
not ask for. A request may take its devices from several such pools.
Requests are served in turn, each from what the earlier ones left, taking
from the pools in order: pools with fewer tags first, so that generic
requests leave specialised devices to the requests that need them.

When ``numa_cells`` (the host NUMA cells the instance is on) is given,
the request's NUMA policy narrows the pools, as Nova's does: devices on
those cells are always used if there are enough of them; otherwise
``required`` fails, ``socket`` allows pools on any cell of the same
socket (and fails when the host topology gives no sockets), ``legacy``
allows pools with no NUMA node, and ``preferred`` allows any pool,
closest first. Gantt leaves out unrequested PF, vDPA and remote-managed
pools before it counts devices for the NUMA policy, where Nova counts
them and drops them after; counting only usable devices never refuses a
host that Nova's order would accept.
"""

import collections
import json

from oslo_log import log as logging
from oslo_utils import strutils

from scheduler.pci import alias as pci_alias
from scheduler.pci import errors

LOG = logging.getLogger(__name__)

# A pool as matched: ``attrs`` holds its IDs, NUMA node and tags flat.
Pool = collections.namedtuple('Pool', 'key count numa_node attrs')

_REMOTE_MANAGED = 'remote_managed'
_LIVE_MIGRATABLE = 'live_migratable'


def _id_of(pool, name):
    value = pool.get(name)
    if not isinstance(value, str) or not value:
        raise errors.PciPoolInvalid(pool=pool, reason='%r must be a '
                                    'non-empty string' % name)
    return value.lower()


def _identity(pool):
    """``(vendor_id, product_id, numa_node, tags)`` of a pool, checked."""
    if not isinstance(pool, dict):
        raise errors.PciPoolInvalid(pool=pool, reason='not an object')
    numa_node = pool.get('numa_node')
    if numa_node is not None and (isinstance(numa_node, bool)
                                  or not isinstance(numa_node, int)):
        raise errors.PciPoolInvalid(pool=pool, reason="'numa_node' must "
                                    "be an integer or null")
    tags = pool.get('tags')
    tags = {} if tags is None else tags
    if not isinstance(tags, dict):
        raise errors.PciPoolInvalid(pool=pool, reason="'tags' must be an "
                                    "object")
    return (_id_of(pool, 'vendor_id'), _id_of(pool, 'product_id'),
            numa_node, tags)


def _count_of(pool):
    count = pool.get('count')
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise errors.PciPoolInvalid(pool=pool, reason="'count' must be a "
                                    "non-negative integer")
    return count


def pool_key(pool):
    """The canonical string naming ``pool`` in ``pci_usage``.

    Built from the vendor and product IDs (lower case), the NUMA node and
    the tags, as compact JSON with sorted keys; ``count`` is not part of
    it. Example: ``{"numa_node":0,"product_id":"154d","tags":{"dev_type":
    "type-VF"},"vendor_id":"8086"}`` (on one line).

    :raises: PciPoolInvalid if those fields are not of the reported shape.
    """
    return _key_of(pool, *_identity(pool))


def _key_of(pool, vendor_id, product_id, numa_node, tags):
    try:
        return json.dumps({'vendor_id': vendor_id, 'product_id': product_id,
                           'numa_node': numa_node, 'tags': tags},
                          sort_keys=True, separators=(',', ':'))
    except (TypeError, ValueError) as error:
        raise errors.PciPoolInvalid(pool=pool, reason='tags are not JSON '
                                    '(%s)' % error)


def index_pools(pools):
    """The host's pools as a tuple of :data:`Pool`, in serving order.

    Pools with the same key are merged (their counts added).
    :raises: PciPoolInvalid for a pool that is not of the reported shape.
    """
    if not pools:
        return ()
    if not isinstance(pools, (list, tuple)):
        raise errors.PciPoolInvalid(pool=pools, reason='not a list')
    merged = {}
    for pool in pools:
        vendor_id, product_id, numa_node, tags = _identity(pool)
        key = _key_of(pool, vendor_id, product_id, numa_node, tags)
        count = _count_of(pool)
        if key in merged:
            merged[key] = merged[key]._replace(
                count=merged[key].count + count)
            continue
        attrs = dict(tags)
        attrs.update(vendor_id=vendor_id, product_id=product_id,
                     numa_node=numa_node)
        merged[key] = Pool(key, count, numa_node, attrs)
    return tuple(sorted(merged.values(), key=lambda p: len(p.attrs)))


def normalized_usage(usage):
    """``usage`` checked, as a new dict without zero entries.

    :raises: PciUsageInvalid for a key that is not a string or a count
        that is not a non-negative integer.
    """
    found = {}
    for key, used in (usage or {}).items():
        if not isinstance(key, str):
            raise errors.PciUsageInvalid(key=key, reason='not a string')
        if isinstance(used, bool) or not isinstance(used, int) or used < 0:
            raise errors.PciUsageInvalid(
                key=key, reason='%r is not a non-negative integer' % (used,))
        if used:
            found[key] = used
    return found


def free_counts(pools, usage):
    """``{pool key: free devices}`` of every pool (never below 0)."""
    usage = normalized_usage(usage)
    return {pool.key: max(0, pool.count - usage.get(pool.key, 0))
            for pool in index_pools(pools)}


def free_by_numa_node(pools, usage):
    """``{numa node: free devices}`` of the host's pools (a pool without
    a NUMA node counts under None)."""
    free = free_counts(pools, usage)
    by_node = collections.Counter()
    for pool in index_pools(pools):
        by_node[pool.numa_node] += free[pool.key]
    return dict(by_node)


def free_devices_total(pools, usage):
    """Free devices of the host, all pools together.

    A host with fewer than :func:`scheduler.pci.request.devices_needed`
    never serves the requests: a cheap test before :func:`supports`.
    """
    return sum(free_counts(pools, usage).values())


def _value_matches(wanted, actual):
    if isinstance(wanted, list) and isinstance(actual, list):
        return all(item in actual for item in wanted)
    if isinstance(wanted, str):
        wanted = wanted.lower()
    if isinstance(actual, str):
        actual = actual.lower()
    return wanted == actual


def _spec_matches(attrs, spec):
    return all(_value_matches(wanted, attrs.get(name))
               for name, wanted in spec.items())


def _unrequested(attrs, specs):
    """True if the pool is of a special kind that no spec asks for."""
    for dev_type in (pci_alias.TYPE_PF, pci_alias.TYPE_VDPA):
        if (attrs.get('dev_type') == dev_type
                and all(spec.get('dev_type') != dev_type for spec in specs)):
            return True
    if (strutils.bool_from_string(attrs.get(_REMOTE_MANAGED))
            and not any(strutils.bool_from_string(spec.get(_REMOTE_MANAGED))
                        for spec in specs)):
        return True
    for flag in ('true', 'false'):
        if (all(spec.get(_LIVE_MIGRATABLE) == flag for spec in specs)
                and attrs.get(_LIVE_MIGRATABLE) != flag):
            return True
    return False


def request_matches(pool, request):
    """True if the :data:`Pool` ``pool`` may serve ``request`` (a
    :class:`scheduler.pci.request.PciRequest`), NUMA aside."""
    specs = request.specs
    return (any(_spec_matches(pool.attrs, spec) for spec in specs)
            and not _unrequested(pool.attrs, specs))


def _total(pools, free):
    return sum(free[pool.key] for pool in pools)


def cell_sockets(host_topology):
    """``{cell id: socket}`` of a host NUMA topology, or None when it
    does not say (no topology, no cells, a cell with socket null)."""
    if not isinstance(host_topology, dict):
        return None
    cells = host_topology.get('cells')
    if not cells or not isinstance(cells, list):
        return None
    sockets = {}
    for cell in cells:
        if not isinstance(cell, dict) or 'id' not in cell:
            return None
        socket = cell.get('socket', cell['id'])
        if socket is None:
            return None
        sockets[cell['id']] = socket
    return sockets


def _same_socket(pools, cells, host_topology):
    sockets = cell_sockets(host_topology)
    if sockets is None:
        LOG.debug('No socket information in the host NUMA topology; the '
                  'socket PCI NUMA policy cannot be met')
        return []
    wanted = {sockets[cell] for cell in cells if cell in sockets}
    allowed = {cell for cell, socket in sockets.items() if socket in wanted}
    return [pool for pool in pools if pool.numa_node in allowed]


def _numa_candidates(pools, free, request, numa_cells, host_topology):
    """The pools of ``pools`` the request's NUMA policy allows, closest
    first."""
    cells = set(numa_cells)

    def rank(pool):
        if pool.numa_node in cells:
            return 0
        return 1 if pool.numa_node is None else 2
    pools = sorted(pools, key=rank)
    local = [pool for pool in pools if rank(pool) == 0]
    policy = request.numa_policy or pci_alias.LEGACY
    if policy == pci_alias.REQUIRED or _total(local, free) >= request.count:
        return local
    if policy == pci_alias.SOCKET:
        return _same_socket(pools, cells, host_topology)
    near = [pool for pool in pools if rank(pool) < 2]
    if policy == pci_alias.LEGACY or _total(near, free) >= request.count:
        return near
    return pools


def _candidates(index, free, request, numa_cells, host_topology):
    pools = [pool for pool in index
             if free[pool.key] and request_matches(pool, request)]
    if numa_cells:
        pools = _numa_candidates(pools, free, request, numa_cells,
                                 host_topology)
    return pools


def allocate(pools, usage, requests, numa_cells=None, host_topology=None):
    """The usage delta ``{pool key: devices}`` serving every request at
    once, or None if the host cannot.

    :param pools: the host's ``pci_device_pools``.
    :param usage: the host's ``pci_usage`` (None or ``{}``: none used).
    :param requests: PciRequests, served in turn.
    :param numa_cells: host NUMA cell ids the instance is on, or None to
        ignore NUMA affinity.
    :param host_topology: the host's ``numa_topology`` (for ``socket``).
    """
    index = index_pools(pools)
    usage = normalized_usage(usage)
    free = {pool.key: max(0, pool.count - usage.get(pool.key, 0))
            for pool in index}
    delta = {}
    for request in requests:
        needed = request.count
        for pool in _candidates(index, free, request, numa_cells,
                                host_topology):
            taken = min(needed, free[pool.key])
            free[pool.key] -= taken
            delta[pool.key] = delta.get(pool.key, 0) + taken
            needed -= taken
            if not needed:
                break
        if needed:
            LOG.debug('No PCI devices left for %d of the %d device(s) of '
                      'alias %s', needed, request.count, request.alias_name)
            return None
    return delta


def supports(pools, usage, requests, numa_cells=None, host_topology=None):
    """True if the host can serve every request at once (see
    :func:`allocate`, which gives the devices it would take)."""
    if not requests:
        return True
    return allocate(pools, usage, requests, numa_cells,
                    host_topology) is not None


def _delta_items(delta):
    for key, taken in (delta or {}).items():
        if isinstance(taken, bool) or not isinstance(taken, int) or taken < 0:
            raise errors.PciUsageInvalid(
                key=key, reason='delta %r is not a non-negative integer'
                % (taken,))
        if taken:
            yield key, taken


def apply(usage, delta, pools):
    """``usage`` plus ``delta``, as a new dict; the exact inverse of
    :func:`release`.

    :param pools: the host's pools as they are now.
    :raises: PciDevicesUnavailable if a pool of ``delta`` is gone or has
        fewer free devices than ``delta`` takes (a claim lost a race).
    """
    counts = {pool.key: pool.count for pool in index_pools(pools)}
    result = normalized_usage(usage)
    for key, taken in _delta_items(delta):
        count = counts.get(key, 0)
        used = result.get(key, 0)
        if used + taken > count:
            raise errors.PciDevicesUnavailable(
                key=key, wanted=taken, free=max(0, count - used),
                count=count)
        result[key] = used + taken
    return result


def release(usage, delta):
    """``usage`` minus ``delta``, as a new dict without zero entries.

    :raises: PciUsageInvalid if ``delta`` gives back more devices of a
        pool than ``usage`` has taken.
    """
    result = normalized_usage(usage)
    for key, taken in _delta_items(delta):
        used = result.get(key, 0)
        if taken > used:
            raise errors.PciUsageInvalid(
                key=key, reason='releasing %d device(s) but only %d are '
                'used' % (taken, used))
        if used == taken:
            del result[key]
        else:
            result[key] = used - taken
    return result
