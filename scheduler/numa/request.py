"""From a flavor and an image to an instance NUMA request.

``get_request`` reads the flavor's vCPUs, memory and extra specs and the
image properties, checks them the way Nova does, and returns the NUMA
cells the instance asks for, or ``None`` when it has no NUMA needs at all
(the fast path: no NUMA filter work for that request)::

    req = request.get_request(4, 4096, {'hw:cpu_policy': 'dedicated',
                                        'hw:numa_nodes': '2'}, {})
    [sorted(c.pcpuset) for c in req.cells]     # [[0, 1], [2, 3]]

A NUMA topology is implied by ``hw:numa_nodes``, a ``dedicated`` or
``mixed`` CPU policy, or ``hw:mem_page_size``; without ``hw:numa_nodes``
it has one cell. ``hw:numa_cpus.N`` / ``hw:numa_mem.N`` (or the image's
``hw_numa_cpus.N`` / ``hw_numa_mem.N``, never both) split vCPUs and memory
(MiB) across cells and must cover each vCPU once and all memory exactly;
without them vCPUs and memory are split evenly.

Flavor against image, as Nova: an image may not override a CPU policy or
thread policy the flavor sets explicitly (a ``shared`` flavor forbids a
``dedicated``/``mixed`` image, a ``mixed`` one a ``dedicated`` image), may
not set ``hw_numa_nodes``/``hw_numa_cpus``/``hw_numa_mem`` when the flavor
does, and may only choose a page size when the flavor says ``any`` or
``large``. ``resources:PCPU`` / ``resources:VCPU`` and
``trait:HW_CPU_HYPERTHREADING`` are read too (see
:mod:`scheduler.numa.resources`). Every error is an
:class:`errors.InvalidNUMARequest` or :class:`errors.NUMARequestConflict`
naming the key and the value.
"""

import dataclasses
import re
from typing import Any

from scheduler.numa import cpuspec
from scheduler.numa import errors
from scheduler.numa import resources

SHARED, DEDICATED, MIXED = 'shared', 'dedicated', 'mixed'
CPU_POLICIES = (SHARED, DEDICATED, MIXED)
PREFER, ISOLATE, REQUIRE = 'prefer', 'isolate', 'require'
THREAD_POLICIES = (PREFER, ISOLATE, REQUIRE)
PAGE_SMALL, PAGE_LARGE, PAGE_ANY = 'small', 'large', 'any'
EMULATOR_SHARE, EMULATOR_ISOLATE = 'share', 'isolate'
EMULATOR_POLICIES = (EMULATOR_SHARE, EMULATOR_ISOLATE)
NUMA_NODES_MAX = 128
_TRUE = ('1', 't', 'true', 'on', 'y', 'yes')
_UNITS_KB = {'': 1, 'k': 1, 'm': 1024, 'g': 1024 ** 2, 't': 1024 ** 3}
_PAGE_RE = re.compile(r'^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$', re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class InstanceCell:
    """One guest NUMA cell: shared vCPUs, dedicated vCPUs, memory (MiB)."""

    id: int
    cpuset: frozenset[int]
    pcpuset: frozenset[int]
    memory_mb: int

    @property
    def vcpus(self) -> int:
        return len(self.cpuset) + len(self.pcpuset)


@dataclasses.dataclass(frozen=True)
class InstanceRequest:
    """The NUMA needs of one instance.

    ``pagesize`` is ``None`` (no page size asked), ``'small'``, ``'large'``,
    ``'any'`` or a size in KiB; ``cpu_policy`` is ``None`` (shared without
    asking), or one of :data:`CPU_POLICIES`.
    """

    cells: tuple[InstanceCell, ...]
    cpu_policy: str | None = None
    cpu_thread_policy: str | None = None
    pagesize: str | int | None = None
    realtime_cpus: frozenset[int] = frozenset()
    emulator_threads_policy: str | None = None

    @property
    def pinned(self) -> bool:
        return self.cpu_policy in (DEDICATED, MIXED)

    @property
    def emulator_cpus(self) -> int:
        """Extra host CPUs for the emulator threads, on the first cell."""
        return 1 if self.emulator_threads_policy == EMULATOR_ISOLATE else 0


def _pair(key: str, extra_specs: dict, image_props: dict) -> tuple:
    return extra_specs.get('hw:' + key), image_props.get('hw_' + key)


def parse_page_size(value: Any, key: str = 'hw:mem_page_size'):
    """Return ``'small'|'large'|'any'`` or a page size in KiB.

    A bare number is KiB; ``2MB``, ``2M``, ``2MiB``, ``1GB`` use binary
    units (as Nova does).
    """
    text = str(value).strip().lower()
    if text in (PAGE_SMALL, PAGE_LARGE, PAGE_ANY):
        return text
    match = _PAGE_RE.match(text)
    if not match or int(match.group(1)) == 0:
        raise errors.InvalidNUMARequest(
            key=key, value=value,
            reason="must be 'small', 'large', 'any' or a size such as "
                   "2048, 2MB or 1GB")
    return int(match.group(1)) * _UNITS_KB[match.group(2).lower()]


def _cpu_policy(extra_specs: dict, image_props: dict) -> str | None:
    flavor, image = _pair('cpu_policy', extra_specs, image_props)
    for key, value in (('hw:cpu_policy', flavor), ('hw_cpu_policy', image)):
        if value is not None and value not in CPU_POLICIES:
            raise errors.InvalidNUMARequest(
                key=key, value=value,
                reason='must be one of %s' % ', '.join(CPU_POLICIES))
    forbidden = {SHARED: (DEDICATED, MIXED), MIXED: (DEDICATED,)}
    if flavor and image in forbidden.get(flavor, ()):
        raise errors.NUMARequestConflict(
            reason='image hw_cpu_policy=%s may not override flavor '
                   'hw:cpu_policy=%s' % (image, flavor))
    return flavor or image


def _thread_policy(extra_specs: dict, image_props: dict) -> str | None:
    flavor, image = _pair('cpu_thread_policy', extra_specs, image_props)
    for key, value in (('hw:cpu_thread_policy', flavor),
                       ('hw_cpu_thread_policy', image)):
        if value is not None and value not in THREAD_POLICIES:
            raise errors.InvalidNUMARequest(
                key=key, value=value,
                reason='must be one of %s' % ', '.join(THREAD_POLICIES))
    if flavor in (None, PREFER):
        return flavor or image
    if image and image != flavor:
        raise errors.NUMARequestConflict(
            reason='image hw_cpu_thread_policy=%s may not override flavor '
                   'hw:cpu_thread_policy=%s' % (image, flavor))
    return flavor


def _mask(value: str, key: str, vcpus: int) -> set[int]:
    if not isinstance(value, str):
        raise errors.InvalidNUMARequest(key=key, value=value,
                                        reason='must be a CPU list string')
    if value.strip().startswith('^'):
        return cpuspec.parse_cpu_spec('0-%d,%s' % (vcpus - 1, value), key)
    return cpuspec.parse_cpu_spec(value, key)


def _emulator_policy(extra_specs: dict) -> str | None:
    value = extra_specs.get('hw:emulator_threads_policy')
    if value and value not in EMULATOR_POLICIES:
        raise errors.InvalidNUMARequest(
            key='hw:emulator_threads_policy', value=value,
            reason='must be one of %s' % ', '.join(EMULATOR_POLICIES))
    return value or None


def _realtime_cpus(vcpus: int, extra_specs: dict,
                   image_props: dict) -> set[int]:
    flag = str(extra_specs.get('hw:cpu_realtime', '')).strip().lower()
    if flag not in _TRUE:
        return set()
    flavor, image = _pair('cpu_realtime_mask', extra_specs, image_props)
    key = 'hw_cpu_realtime_mask' if image else 'hw:cpu_realtime_mask'
    mask = image or flavor
    rt = _mask(mask, key, vcpus) if mask else set(range(vcpus))
    if not rt:
        raise errors.InvalidNUMARequest(key=key, value=mask,
                                        reason='names no realtime vCPU')
    if not rt <= set(range(vcpus)):
        raise errors.InvalidNUMARequest(
            key=key, value=mask,
            reason='vCPUs %s are not in the flavor (0-%d)'
                   % (sorted(rt - set(range(vcpus))), vcpus - 1))
    if len(rt) == vcpus and not _emulator_policy(extra_specs):
        raise errors.InvalidNUMARequest(
            key=key, value=mask,
            reason='at least one vCPU must be left non-realtime (or '
                   'hw:emulator_threads_policy set)')
    return rt


def _dedicated_mask(vcpus: int, extra_specs: dict) -> set[int]:
    value = extra_specs.get('hw:cpu_dedicated_mask')
    if not value:
        return set()
    pcpus = _mask(value, 'hw:cpu_dedicated_mask', vcpus)
    if not pcpus <= set(range(vcpus)):
        raise errors.InvalidNUMARequest(
            key='hw:cpu_dedicated_mask', value=value,
            reason='vCPUs %s are not in the flavor (0-%d)'
                   % (sorted(pcpus - set(range(vcpus))), vcpus - 1))
    if not pcpus or len(pcpus) == vcpus:
        raise errors.InvalidNUMARequest(
            key='hw:cpu_dedicated_mask', value=value,
            reason='a mixed instance needs at least one dedicated and one '
                   'shared vCPU')
    return pcpus


def _dedicated_cpus(vcpus: int, policy: str | None, thread_policy,
                    realtime: set[int], extra_specs: dict) -> set[int]:
    """Check the policies against each other; return the pinned vCPUs."""
    dedicated = _dedicated_mask(vcpus, extra_specs)
    if policy in (None, SHARED):
        if thread_policy:
            raise errors.NUMARequestConflict(
                reason='cpu_thread_policy=%s needs hw:cpu_policy dedicated '
                       'or mixed' % thread_policy)
        if dedicated:
            raise errors.NUMARequestConflict(
                reason='hw:cpu_dedicated_mask needs hw:cpu_policy=mixed')
        if realtime:
            raise errors.NUMARequestConflict(
                reason='hw:cpu_realtime needs hw:cpu_policy dedicated or '
                       'mixed')
        if _emulator_policy(extra_specs) == EMULATOR_ISOLATE:
            raise errors.NUMARequestConflict(
                reason='hw:emulator_threads_policy=isolate needs '
                       'hw:cpu_policy dedicated or mixed')
        return set()
    if policy == DEDICATED:
        if dedicated:
            raise errors.NUMARequestConflict(
                reason='hw:cpu_dedicated_mask needs hw:cpu_policy=mixed, '
                       'not dedicated')
        return set(range(vcpus))
    if realtime and dedicated:
        raise errors.NUMARequestConflict(
            reason='a mixed instance takes its dedicated vCPUs from either '
                   'hw:cpu_dedicated_mask or hw:cpu_realtime_mask, not both')
    if not (realtime or dedicated):
        raise errors.NUMARequestConflict(
            reason='hw:cpu_policy=mixed needs hw:cpu_dedicated_mask or '
                   'hw:cpu_realtime_mask')
    return dedicated or set(realtime)


def _page_size(extra_specs: dict, image_props: dict):
    flavor, image = _pair('mem_page_size', extra_specs, image_props)
    if not flavor:
        if image:
            raise errors.NUMARequestConflict(
                reason='image hw_mem_page_size=%s is not allowed: the '
                       'flavor sets no hw:mem_page_size' % image)
        return None
    size = parse_page_size(flavor)
    if image and size in (PAGE_ANY, PAGE_LARGE):
        return parse_page_size(image, 'hw_mem_page_size')
    if image:
        raise errors.NUMARequestConflict(
            reason='image hw_mem_page_size=%s may not override flavor '
                   'hw:mem_page_size=%s' % (image, flavor))
    return size


def _node_count(extra_specs: dict, image_props: dict) -> int | None:
    flavor, image = _pair('numa_nodes', extra_specs, image_props)
    if flavor and image:
        raise errors.NUMARequestConflict(
            reason='image hw_numa_nodes may not be set when the flavor '
                   'sets hw:numa_nodes')
    key = 'hw:numa_nodes' if flavor else 'hw_numa_nodes'
    nodes = flavor or image
    if nodes is None:
        return None
    try:
        count = int(str(nodes).strip())
    except ValueError:
        count = 0
    if count < 1 or count > NUMA_NODES_MAX:
        raise errors.InvalidNUMARequest(
            key=key, value=nodes,
            reason='must be an integer from 1 to %d' % NUMA_NODES_MAX)
    return count


def _per_node(props: dict, prefix: str, parse) -> list | None:
    values = []
    for node in range(NUMA_NODES_MAX):
        key = '%s.%d' % (prefix, node)
        if key not in props:
            break
        values.append(parse(props[key], key))
    stray = [k for k in props if k.startswith(prefix + '.')
             and not re.fullmatch(r'\d+', k[len(prefix) + 1:])]
    if stray:
        raise errors.InvalidNUMARequest(
            key=stray[0], value=props[stray[0]],
            reason='the suffix must be a NUMA node number')
    return values or None


def _parse_mem(value: Any, key: str) -> int:
    try:
        mem = int(str(value).strip())
    except ValueError:
        mem = -1
    if mem < 0:
        raise errors.InvalidNUMARequest(
            key=key, value=value, reason='must be an integer (MiB) >= 0')
    return mem


def _parse_cpus(value: Any, key: str) -> set[int]:
    if isinstance(value, (list, tuple, set, frozenset)):
        return set(value)
    return cpuspec.parse_cpu_spec(value, key)


def _manual_split(nodes: int, vcpus: int, memory_mb: int,
                  extra_specs: dict, image_props: dict):
    """Return ``(cpu sets, memory list)`` per node, or ``None``."""
    lists = {}
    for name, parse in (('numa_cpus', _parse_cpus),
                        ('numa_mem', _parse_mem)):
        flavor = _per_node(extra_specs, 'hw:' + name, parse)
        image = _per_node(image_props, 'hw_' + name, parse)
        if flavor and image:
            raise errors.NUMARequestConflict(
                reason='image hw_%s.N may not be set when the flavor sets '
                       'hw:%s.N' % (name, name))
        lists[name] = flavor or image
    cpu_list, mem_list = lists['numa_cpus'], lists['numa_mem']
    if cpu_list is None and mem_list is None:
        return None
    if cpu_list is None or mem_list is None or \
            len(cpu_list) != nodes or len(mem_list) != nodes:
        raise errors.NUMARequestConflict(
            reason='numa_cpus.N and numa_mem.N must both be given for each '
                   'of the %d NUMA nodes (got %d and %d)'
                   % (nodes, len(cpu_list or ()), len(mem_list or ())))
    unassigned = set(range(vcpus))
    for node, cpus in enumerate(cpu_list):
        key = 'numa_cpus.%d' % node
        if cpus - set(range(vcpus)):
            raise errors.InvalidNUMARequest(
                key=key, value=cpuspec.format_cpu_spec(cpus),
                reason='vCPUs %s are out of range 0-%d'
                       % (sorted(cpus - set(range(vcpus))), vcpus - 1))
        if cpus - unassigned:
            raise errors.InvalidNUMARequest(
                key=key, value=cpuspec.format_cpu_spec(cpus),
                reason='vCPUs %s are already given to another node'
                       % sorted(cpus - unassigned))
        unassigned -= cpus
    if unassigned:
        raise errors.NUMARequestConflict(
            reason='vCPUs %s are in no numa_cpus.N' % sorted(unassigned))
    if sum(mem_list) != memory_mb:
        raise errors.NUMARequestConflict(
            reason='numa_mem.N add up to %d MiB, the flavor has %d MiB'
                   % (sum(mem_list), memory_mb))
    return cpu_list, mem_list


def _auto_split(nodes: int, vcpus: int, memory_mb: int):
    if vcpus % nodes or memory_mb % nodes:
        raise errors.NUMARequestConflict(
            reason='%d vCPUs and %d MiB cannot be split evenly over %d NUMA '
                   'nodes; give numa_cpus.N and numa_mem.N'
                   % (vcpus, memory_mb, nodes))
    per_cpu, per_mem = vcpus // nodes, memory_mb // nodes
    return ([set(range(n * per_cpu, (n + 1) * per_cpu))
             for n in range(nodes)], [per_mem] * nodes)


def get_request(vcpus: int, memory_mb: int, extra_specs: dict | None,
                image_props: dict | None = None) -> InstanceRequest | None:
    """Return the instance NUMA request, or ``None`` if it has none.

    Raises :class:`errors.InvalidNUMARequest` or
    :class:`errors.NUMARequestConflict` for bad or contradictory settings.
    """
    extra_specs = extra_specs or {}
    image_props = image_props or {}
    policy, thread_policy = resources.cpu_policies(
        vcpus, extra_specs, image_props,
        _cpu_policy(extra_specs, image_props),
        _thread_policy(extra_specs, image_props))
    realtime = _realtime_cpus(vcpus, extra_specs, image_props)
    dedicated = _dedicated_cpus(vcpus, policy, thread_policy, realtime,
                                extra_specs)
    nodes = _node_count(extra_specs, image_props)
    pagesize = _page_size(extra_specs, image_props)
    if not (nodes or pagesize or policy in (DEDICATED, MIXED)):
        return None
    nodes = nodes or 1
    if nodes > vcpus:
        raise errors.InvalidNUMARequest(
            key='numa_nodes', value=nodes,
            reason='more NUMA nodes than the %d vCPUs' % vcpus)
    split = _manual_split(nodes, vcpus, memory_mb, extra_specs, image_props)
    cpu_list, mem_list = split or _auto_split(nodes, vcpus, memory_mb)
    cells = tuple(
        InstanceCell(id=node, cpuset=frozenset(cpus - dedicated),
                     pcpuset=frozenset(cpus & dedicated), memory_mb=mem)
        for node, (cpus, mem) in enumerate(zip(cpu_list, mem_list)))
    return InstanceRequest(
        cells=cells, cpu_policy=policy, cpu_thread_policy=thread_policy,
        pagesize=pagesize, realtime_cpus=frozenset(realtime),
        emulator_threads_policy=_emulator_policy(extra_specs))
