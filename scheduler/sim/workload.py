"""Workloads for ``gantt-sim``: generated, or read from a CSV trace.

A workload is a list of :class:`Request`, each asking for ``count``
instances of one size at ``start`` (seconds from the beginning), which
are deleted at ``end`` (None: they outlive the run).

:func:`generate` draws one from a seed: Poisson arrivals, flavors by the
cloud's weights, lognormal (heavy-tailed) lifetimes, a share of
multi-instance requests and a share of server groups (affinity or
anti-affinity, all members in one request)::

    requests = workload.generate(cloud, workload.Generator(), seed=1)

:func:`read_csv` reads a trace, one row per VM::

    id,tenant,flavor,vcpus,memory_mb,disk_gb,start,end
    vm-1,acme,m1.small,,,,0,3600
    vm-2,acme,,2,4096,40,12.5,

``flavor`` names one of the cloud's flavors, or is left empty and
``vcpus``, ``memory_mb`` and ``disk_gb`` give the size; ``start`` and
``end`` are seconds (``end`` empty: never deleted). Public VM traces
convert to it column by column; Azure's ``vmtable.csv``: ``vmid`` ->
id, ``subscriptionid`` -> tenant, ``vmcorecountbucket`` -> vcpus,
``vmmemorybucket`` (GB) x 1024 -> memory_mb, ``vmcreated`` and
``vmdeleted`` -> start and end. A wrong value raises
:class:`WorkloadError` naming the row and field.
"""

import csv
import dataclasses
import math
import random

# Seconds in an hour: the generator's options are in hours.
HOUR = 3600.0
CSV_FIELDS = ('id', 'tenant', 'flavor', 'vcpus', 'memory_mb', 'disk_gb',
              'start', 'end')
SIZE_FIELDS = ('vcpus', 'memory_mb', 'disk_gb')


class WorkloadError(ValueError):
    """The trace is wrong; the message names the row and field."""


@dataclasses.dataclass
class Request:
    id: str
    tenant: str
    flavor: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    start: float
    end: float | None = None
    count: int = 1
    policy: str | None = None
    # The flavor's extra specs (NUMA, pinning, huge pages, PCI).
    extra_specs: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Generator:
    """What :func:`generate` draws; the defaults are gantt-sim's."""
    # Requests in all, as a multiple of how many of the cloud's average
    # flavor its RAM holds.
    fill: float = 1.3
    hours: float = 48.0
    # Lifetimes: lognormal with this median (hours) and sigma.
    lifetime_median: float = 72.0
    lifetime_sigma: float = 1.5
    multi_share: float = 0.1
    max_count: int = 4
    group_share: float = 0.05
    tenants: int = 20


def average_flavor_ram(cloud):
    total = sum(flavor.weight for flavor in cloud.flavors)
    return sum(flavor.memory_mb * flavor.weight
               for flavor in cloud.flavors) / total


def instance_capacity(cloud):
    """How many instances of the average flavor the cloud's RAM holds."""
    ram = sum(group.memory_mb * group.count for group in cloud.groups)
    return ram / average_flavor_ram(cloud)


def generate(cloud, options, seed):
    """A list of Requests, the same for the same cloud, options, seed."""
    rng = random.Random(seed)
    duration = options.hours * HOUR
    # Instances in all over the run, and the request rate that gives them.
    instances = options.fill * instance_capacity(cloud)
    mean_count = 1 + (options.multi_share + options.group_share) * (
        (2 + options.max_count) / 2.0 - 1)
    rate = instances / mean_count / duration
    weights = [flavor.weight for flavor in cloud.flavors]
    requests = []
    now = rng.expovariate(rate)
    while now < duration:
        flavor = rng.choices(cloud.flavors, weights)[0]
        lifetime = rng.lognormvariate(
            math.log(options.lifetime_median * HOUR), options.lifetime_sigma)
        kind = rng.random()
        count, policy = 1, None
        if kind < options.group_share:
            count = rng.randint(2, options.max_count)
            policy = rng.choice(('affinity', 'anti-affinity'))
        elif kind < options.group_share + options.multi_share:
            count = rng.randint(2, options.max_count)
        requests.append(Request(
            id='req-%06d' % len(requests),
            tenant='tenant-%02d' % rng.randrange(options.tenants),
            flavor=flavor.name, vcpus=flavor.vcpus,
            memory_mb=flavor.memory_mb, disk_gb=flavor.disk_gb,
            start=now, end=now + lifetime, count=count, policy=policy,
            extra_specs=flavor.extra_specs))
        now += rng.expovariate(rate)
    return requests


def _number(row, field, line, kind, required=True):
    text = (row.get(field) or '').strip()
    if not text:
        if required:
            raise WorkloadError('row %d, field %s: missing' % (line, field))
        return None
    try:
        value = kind(text)
    except ValueError:
        raise WorkloadError('row %d, field %s: %r is not %s' % (
            line, field, text,
            'an integer' if kind is int else 'a number'))
    if not math.isfinite(value) or value < 0:
        raise WorkloadError('row %d, field %s: %r must be >= 0'
                            % (line, field, text))
    return value


def _size(row, line, cloud):
    name = (row.get('flavor') or '').strip()
    if name:
        flavor = cloud.flavor(name)
        if flavor is None:
            raise WorkloadError('row %d, field flavor: %r is not one of the '
                                "cloud's flavors (%s)" % (
                                    line, name, ', '.join(
                                        f.name for f in cloud.flavors)))
        return (name, flavor.vcpus, flavor.memory_mb, flavor.disk_gb,
                flavor.extra_specs)
    vcpus, memory_mb, disk_gb = (_number(row, field, line, int)
                                 for field in SIZE_FIELDS)
    if not vcpus or not memory_mb:
        raise WorkloadError('row %d, field %s: must be > 0' % (
            line, 'vcpus' if not vcpus else 'memory_mb'))
    return ('%dc-%dm-%dg' % (vcpus, memory_mb, disk_gb), vcpus, memory_mb,
            disk_gb, {})


def _request(row, line, cloud, seen):
    ident = (row.get('id') or '').strip()
    if not ident:
        raise WorkloadError('row %d, field id: missing' % line)
    if ident in seen:
        raise WorkloadError('row %d, field id: %r was already on row %d'
                            % (line, ident, seen[ident]))
    seen[ident] = line
    name, vcpus, memory_mb, disk_gb, extra_specs = _size(row, line, cloud)
    start = _number(row, 'start', line, float)
    end = _number(row, 'end', line, float, required=False)
    if end is not None and end < start:
        raise WorkloadError('row %d, field end: %s is before start %s'
                            % (line, row['end'].strip(),
                               row['start'].strip()))
    return Request(ident, (row.get('tenant') or '').strip() or 'default',
                   name, vcpus, memory_mb, disk_gb, start, end,
                   extra_specs=extra_specs)


def read_csv(path, cloud):
    """The Requests of a CSV trace (module docstring), by start time.

    Rows are numbered as a spreadsheet shows them: the header is row 1.
    """
    try:
        stream = open(path, newline='')
    except OSError as error:
        raise WorkloadError('%s: %s' % (path, error.strerror))
    with stream:
        reader = csv.DictReader(stream)
        header = reader.fieldnames or []
        for field in ('id', 'start'):
            if field not in header:
                raise WorkloadError('row 1, field %s: missing from the '
                                    'header (columns: %s)'
                                    % (field, ', '.join(CSV_FIELDS)))
        unknown = [field for field in header if field not in CSV_FIELDS]
        if unknown:
            raise WorkloadError('row 1, field %s: unknown column (columns: '
                                '%s)' % (unknown[0], ', '.join(CSV_FIELDS)))
        seen = {}
        requests = []
        for line, row in enumerate(reader, start=2):
            if None in row:
                raise WorkloadError('row %d, field %s: more values than '
                                    'columns' % (line, header[-1]))
            requests.append(_request(row, line, cloud, seen))
    requests.sort(key=lambda request: request.start)
    return requests
