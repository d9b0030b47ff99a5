"""What a simulation measures, and its text summary.

:class:`Recorder` follows usage per host as the claims are won and
released, samples it over the simulated time (utilisation of CPU, RAM
and disk; stranded capacity, the free resources on hosts that can no
longer take one instance of the most common flavor; every host's RAM
fill for the heat map), and counts decisions: placements, NoValidHost by
the step that removed the last host, decision latency. :func:`summary`
prints a :class:`Result`::

    print(metrics.summary(result, 'spread'))

:func:`percentile` is the nearest-rank percentile the benchmarks use too.
"""

import collections
import dataclasses

import numpy as np

from scheduler.sim import providers

RESOURCES = ('vcpus', 'memory_mb', 'disk_gb')
LABELS = ('CPU', 'RAM', 'disk')
DAY = 86400.0
# Host bins of the heat map (hosts are averaged in consecutive groups
# above this many).
HEAT_BINS = 200


def percentile(values, fraction):
    """Nearest-rank percentile of ``values`` (0 <= fraction <= 1)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclasses.dataclass
class Result:
    hosts: int
    horizon: float
    times: np.ndarray
    utilisation: np.ndarray        # (samples, 3) fractions
    stranded: np.ndarray           # (samples, 3) fractions of capacity
    heat: np.ndarray               # (samples, host bins) RAM fill
    latencies: list
    requests: int
    placed: int
    deleted: int
    no_valid_host: dict
    first_no_valid_host: float | None
    peak_before_no_valid_host: np.ndarray
    claim_retries: int
    wall_seconds: float
    callers: int = 1
    workers: int = 1
    # Per-host RAM fill at the end: mean, standard deviation, maximum
    # (how evenly the instances were spread).
    final_fill: tuple = (0.0, 0.0, 0.0)
    # Hosts running at least one instance at the end (packing uses few).
    hosts_in_use: int = 0
    # {request id: [host of each instance]}; [] for no valid host.
    placements: dict = dataclasses.field(default_factory=dict)
    # Instances each request of ``latencies`` asked for, in its order.
    counts: list = dataclasses.field(default_factory=list)
    # Wall seconds before the replay (the cloud written and loaded).
    setup_seconds: float = 0.0

    @property
    def seconds_per_day(self):
        """Wall seconds of the run (set-up and replay) per simulated
        day."""
        days = self.horizon / DAY
        return (self.setup_seconds + self.wall_seconds) / days if days \
            else 0.0

    @property
    def speedup(self):
        """Simulated seconds per real second of replay."""
        return self.horizon / self.wall_seconds if self.wall_seconds else 0


class Recorder:
    """Usage and decisions of one run; see the module docstring."""

    def __init__(self, capacity, flavor, horizon, samples, names):
        self.names = names
        # The request ids decided, in turn, how many instances each
        # placed and their rows one after the other: a run's hundreds of
        # thousands of decisions held without an object each, which the
        # cyclic collector would count and walk inside the decisions
        # timed (see :attr:`placements`).
        self._decided_ids = []
        self._decided_counts = []
        self._decided_rows = []
        self.capacity = capacity
        self.capacity_total = np.maximum(capacity.sum(axis=1), 1e-9)
        self.used = np.zeros_like(capacity)
        # self.used summed over the hosts, kept as claims come and go.
        self.used_total = np.zeros(len(RESOURCES))
        # {(vcpus, memory_mb, disk_gb, extra specs): what one takes}
        self._amounts = {}
        # Instances per host (a baremetal node's take no RAM).
        self.instances = np.zeros(capacity.shape[1], dtype=int)
        self.flavor = np.array([flavor.vcpus, flavor.memory_mb,
                                flavor.disk_gb], dtype=float)
        self.horizon = horizon
        self.times = np.linspace(0.0, horizon, samples + 1)
        self.next_sample = 0
        self.rows = []
        self.clock = 0.0
        self.latencies = []
        self.counts = []
        self.requests = self.placed = self.deleted = 0
        self.no_valid_host = collections.Counter()
        self.first_no_valid_host = None
        self.peak = np.zeros(len(RESOURCES))
        bins = min(HEAT_BINS, capacity.shape[1])
        self.bins = np.array_split(np.arange(capacity.shape[1]), bins)

    def advance(self, clock):
        """The simulated time is now ``clock``: take the samples due."""
        self.clock = clock
        while (self.next_sample < len(self.times)
               and self.times[self.next_sample] <= clock):
            self.rows.append(self._sample())
            self.next_sample += 1

    def _sample(self):
        utilisation = self.used.sum(axis=1) / self.capacity_total
        free = np.clip(self.capacity - self.used, 0, None)
        fits = np.all(free >= self.flavor[:, None], axis=0)
        stranded = free[:, ~fits].sum(axis=1) / self.capacity_total
        fill = self.used[1] / np.maximum(self.capacity[1], 1e-9)
        heat = np.array([fill[rows].mean() for rows in self.bins])
        return utilisation, stranded, heat

    def take(self, row, request, sign):
        """``sign`` = 1: an instance of ``request`` claimed on ``row``;
        -1: released."""
        # What the claim takes: a baremetal flavor's resources:VCPU=0...
        # takes no vCPUs, RAM or disk of the host.
        amounts = self._amounts_of(request)
        self.used[:, row] += sign * amounts
        self.used_total += sign * amounts
        self.instances[row] += sign
        if sign > 0:
            self.placed += 1
            if self.first_no_valid_host is None:
                self.peak = np.maximum(
                    self.peak, self.used_total / self.capacity_total)
        else:
            self.deleted += 1

    def _amounts_of(self, request):
        key = (request.vcpus, request.memory_mb, request.disk_gb,
               tuple(sorted(request.extra_specs.items())))
        amounts = self._amounts.get(key)
        if amounts is None:
            amounts = self._amounts[key] = np.array(
                providers.classic_amounts(request.vcpus, request.memory_mb,
                                          request.disk_gb,
                                          request.extra_specs), dtype=float)
        return amounts

    @property
    def placements(self):
        """``{request id: [host of each instance]}`` ([] for no valid
        host; a request id decided again: its last decision)."""
        names, rows = self.names, self._decided_rows
        placements, at = {}, 0
        for request_id, count in zip(self._decided_ids,
                                     self._decided_counts):
            placements[request_id] = [names[row]
                                      for row in rows[at:at + count]]
            at += count
        return placements

    def decided(self, latency, request, instances, last_filter):
        self.requests += 1
        self.latencies.append(latency)
        self.counts.append(request.count)
        # Kept flat (see placements): no list of its own per request.
        self._decided_ids.append(request.id)
        self._decided_counts.append(len(instances))
        self._decided_rows.extend(row for _uuid, row in instances)
        if not instances:
            self.no_valid_host[last_filter or 'none'] += 1
            # A server group can fail long before the cloud is full (an
            # affinity group larger than any host's room): the cloud's
            # limit is the first request without one that fails.
            if self.first_no_valid_host is None and not request.policy:
                self.first_no_valid_host = self.clock

    def result(self, wall_seconds, claim_retries, callers, workers):
        self.advance(self.horizon)
        # RAM fill of the hosts that have RAM (not the baremetal nodes).
        with_ram = self.capacity[1] > 0
        fill = (self.used[1][with_ram] / self.capacity[1][with_ram]
                if with_ram.any() else np.zeros(1))
        utilisation, stranded, heat = (np.array(column)
                                       for column in zip(*self.rows))
        return Result(
            hosts=self.capacity.shape[1], horizon=self.horizon,
            times=self.times[:len(self.rows)], utilisation=utilisation,
            stranded=stranded, heat=heat, latencies=self.latencies,
            counts=self.counts,
            requests=self.requests, placed=self.placed,
            deleted=self.deleted, no_valid_host=dict(self.no_valid_host),
            first_no_valid_host=self.first_no_valid_host,
            peak_before_no_valid_host=self.peak,
            claim_retries=claim_retries, wall_seconds=wall_seconds,
            callers=callers, workers=workers, placements=self.placements,
            final_fill=(float(fill.mean()), float(fill.std()),
                        float(fill.max())),
            hosts_in_use=int(np.count_nonzero(self.instances > 0)))


def _percent(values):
    return ', '.join('%s %.1f%%' % (label, 100 * value)
                     for label, value in zip(LABELS, values))


def _hours(seconds):
    return '%.1f h' % (seconds / 3600.0)


def _latency_by_count(result):
    """The latency of one-instance requests apart from the others', which
    place several instances in one decision."""
    one = [latency for latency, count in zip(result.latencies,
                                             result.counts) if count == 1]
    several = [latency for latency, count in zip(result.latencies,
                                                 result.counts) if count > 1]
    if not one or not several:
        return []
    return ['  %d one-instance request(s): p50 %.2f ms, p99 %.2f ms; %d '
            'of several instances: p50 %.2f ms, p99 %.2f ms' % (
                len(one), 1000 * percentile(one, 0.5),
                1000 * percentile(one, 0.99), len(several),
                1000 * percentile(several, 0.5),
                1000 * percentile(several, 0.99))]


def summary(result, label='', timings=True):
    """The text summary of a run (see the module docstring); without
    ``timings``, only what the seed decides (no latency, no speed)."""
    lines = ['== %s: %d hosts, %d request(s), %d caller(s), %d '
             'worker(s)' % (label or 'run', result.hosts, result.requests,
                            result.callers, result.workers)]
    failed = sum(result.no_valid_host.values())
    lines.append('placements: %d instance(s) placed, %d deleted, %d '
                 'request(s) with no valid host'
                 % (result.placed, result.deleted, failed))
    for name, count in sorted(result.no_valid_host.items(),
                              key=lambda item: (-item[1], item[0])):
        lines.append('  NoValidHost, last hosts removed by %s: %d'
                     % (name, count))
    if result.first_no_valid_host is None:
        lines.append('first NoValidHost (request without a server '
                     'group): none; peak utilisation: %s'
                     % _percent(result.peak_before_no_valid_host))
    else:
        lines.append('first NoValidHost (request without a server group) '
                     'at %s; peak utilisation before it: %s' % (
                         _hours(result.first_no_valid_host),
                         _percent(result.peak_before_no_valid_host)))
    samples = len(result.times)
    for fraction in (0.25, 0.5, 0.75, 1.0):
        index = min(samples - 1, int(fraction * (samples - 1)))
        lines.append('at %7s: utilisation %s | stranded %s' % (
            _hours(result.times[index]), _percent(result.utilisation[index]),
            _percent(result.stranded[index])))
    lines.append('at the end: %d host(s) in use; RAM fill per host: mean '
                 '%.1f%%, std %.1f%%, max %.1f%%' % (
                     (result.hosts_in_use,)
                     + tuple(100 * v for v in result.final_fill)))
    lines.append('claim conflicts (lost claims retried): %d'
                 % result.claim_retries)
    if not timings:
        return '\n'.join(lines)
    lines.append('decision latency: p50 %.2f ms, p99 %.2f ms' % (
        1000 * percentile(result.latencies, 0.5),
        1000 * percentile(result.latencies, 0.99)))
    lines.extend(_latency_by_count(result))
    lines.append('simulated %s in %.1f s of replay: %.0fx real time'
                 % (_hours(result.horizon), result.wall_seconds,
                    result.speedup))
    lines.append('wall time: %.1f s (set-up %.1f s, replay %.1f s), %.1f s '
                 'per simulated day' % (
                     result.setup_seconds + result.wall_seconds,
                     result.setup_seconds, result.wall_seconds,
                     result.seconds_per_day))
    return '\n'.join(lines)
