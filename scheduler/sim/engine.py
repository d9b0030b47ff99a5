"""The simulated clock: a workload through the real scheduler.

:class:`Simulation` replays a list of :class:`workload.Request` through
real :class:`~scheduler.drivers.filter_scheduler.FilterScheduler`
drivers (filters, weighers, claims) over host caches loaded from the
database the cloud was written to. Arrivals and deletions happen at
their trace times; each decision costs the time it really took
(``time.perf_counter`` around ``select_destinations``, and nothing
else), so two days of 500 hosts replay in about 5 seconds.

Concurrency: ``callers`` requests are answered together, as if that many
callers had them in flight at once, by ``workers`` drivers, each with a
host cache of its own (request *i* of a round goes to worker *i* mod
M). A round starts when its last request arrived (and the workers are
free); each worker's cache then catches up with what the others claimed
and released (:meth:`HostManager.refresh_nodes`), and during the round
it sees only its own claims: that is where concurrent decisions lose
quality and claims conflict. A request's latency is the time from the
round's start until its worker answered it.

Claims: by default in memory (:mod:`scheduler.sim.memory_claims`: the
same checks as the SQL claim, against what the SQL rows would hold, and
the workers' host caches re-read nodes from there), so that a decision
costs what filtering, weighing and claiming cost in process, not a
SQLite round trip. ``sql_claims=True``, or a cloud with NUMA cells, PCI
devices or other resource classes (which only the SQL claims fit), keeps
the real SQL claims and re-reads.

Usage is also kept by :class:`metrics.Recorder` (following the claims'
outcomes) and sampled over time for the report::

    sim = engine.Simulation(cloud, requests, seed=1)
    result = sim.run()
"""

import collections
import gc
import heapq
import random
import time
import uuid

from oslo_log import log as logging
import numpy as np

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import instance_groups
from scheduler.drivers import filter_scheduler
from scheduler import exception
from scheduler.objects import request_spec
from scheduler.sim import cloud as sim_cloud
from scheduler.sim import memory_claims
from scheduler.sim import metrics

CONF = conf.CONF
LOG = logging.getLogger(__name__)
RESOURCES = metrics.RESOURCES
# Samples of usage over the run.
SAMPLES = 200
_ARRIVE, _DELETE = 1, 0
# Instance uuids drawn at once (see Simulation._new_uuid).
_UUID_BATCH = 4096


# Instances held until their deletion event (see Simulation._hold): for
# the n-th held request, requests[n], and its instances' uuids and rows
# at positions starts[n] to starts[n] + counts[n] of uuids and rows.
_Held = collections.namedtuple('_Held', 'requests starts counts uuids rows')


class Simulation:
    """One run of a workload; see the module docstring."""

    def __init__(self, cloud, requests, seed=0, callers=1, workers=1,
                 samples=SAMPLES, checkpoint=None, sql_claims=False):
        """``checkpoint()``: called between two events of the replay (a
        round of decisions, a deletion); what it raises ends the run
        there, no decision cut short. ``sql_claims``: claim in SQL even
        where :func:`memory_claims.suits` the cloud."""
        self.cloud = cloud
        self.checkpoint = checkpoint or (lambda: None)
        self.requests = requests
        self.callers = callers
        self.seed = seed
        self._uuids = np.random.default_rng(seed)
        self._uuid_bytes, self._uuid_at = b'', 0
        # Each worker breaks ties its own way, the same way every run of
        # the seed.
        self.drivers = [filter_scheduler.FilterScheduler(
            host_manager=memory_claims.SimHostManager(auto_refresh=False),
            tie_breaks=random.Random('%d/%d' % (seed, worker)))
            for worker in range(workers)]
        self.horizon = max((r.start for r in requests), default=0.0)
        self.samples = samples
        self._dirty = [set() for _ in self.drivers]
        self.in_memory = not sql_claims and memory_claims.suits(cloud)
        # The truth of usage when claims are in memory (set on loading).
        self.usage = None
        self._flavors = {}
        # The instances placed whose deletion is pending (see _hold).
        self._held = _Held([], [], [], [], [])

    # -- set-up ------------------------------------------------------------

    def _load_caches(self):
        tables = [driver.host_manager.refresh() for driver in self.drivers]
        for shared in tables:
            # The index of instances by host, on the table each cache
            # keeps (which carries it from one claim to the next): else
            # every request's detached copy (a server group's several
            # instances) built its own from every host, 20 ms at 10,000.
            shared.instance_counts(())
        table = tables[0]
        self.row_by_uuid = {state.uuid: row
                            for row, state in enumerate(table.states)}
        self.node_ids = np.array([state.id for state in table.states])
        self.names = [state.host for state in table.states]
        capacity = np.stack([np.asarray(table.capacity[r], dtype=float)
                             for r in RESOURCES])
        if self.in_memory:
            self.usage = memory_claims.Usage(table)
            for driver in self.drivers:
                driver.claimer = self.usage
                driver.host_manager.usage = self.usage
        return metrics.Recorder(capacity, self.cloud.most_common_flavor(),
                                self.horizon, self.samples, self.names)

    def _new_uuid(self):
        # From bytes drawn _UUID_BATCH uuids at a time: the same stream
        # as 16 bytes at a time (whole 64-bit draws either way), for a
        # sixth of the cost of a draw per uuid.
        if self._uuid_at >= len(self._uuid_bytes):
            self._uuid_bytes = self._uuids.bytes(16 * _UUID_BATCH)
            self._uuid_at = 0
        at = self._uuid_at
        self._uuid_at = at + 16
        return str(uuid.UUID(bytes=self._uuid_bytes[at:at + 16]))

    # -- the clock ---------------------------------------------------------

    def run(self):
        """Replay the workload; a :class:`metrics.Result`."""
        for driver in self.drivers:
            driver.start()
        try:
            self.recorder = self._load_caches()
            # What is loaded now lives as long as the run: kept out of
            # the collector's full passes, which grow with every
            # instance the caches record.
            gc.collect()
            gc.freeze()
            started = time.perf_counter()
            self._replay()
            elapsed = time.perf_counter() - started
        finally:
            gc.unfreeze()
            for driver in self.drivers:
                driver.stop()
        stats = [driver.stats for driver in self.drivers]
        return self.recorder.result(
            wall_seconds=elapsed,
            claim_retries=sum(s['claim_retries'] for s in stats),
            callers=self.callers, workers=len(self.drivers))

    def _replay(self):
        events = []
        for order, request in enumerate(self.requests):
            heapq.heappush(events, (request.start, _ARRIVE, order, request))
        clock = 0.0
        heartbeat_at = time.monotonic()
        while events:
            self.checkpoint()
            if time.monotonic() - heartbeat_at >= CONF.report_interval:
                # The computes' heartbeats (real time: a host cache reads
                # liveness against the real clock), outside any decision.
                sim_cloud.heartbeat_all()
                heartbeat_at = time.monotonic()
            when, kind, order, payload = heapq.heappop(events)
            if when > self.horizon:
                break
            clock = max(clock, when)
            self.recorder.advance(clock)
            if kind == _DELETE:
                # (A deletion's order is its number among those held.)
                self._delete(order)
                continue
            batch = [payload]
            while (len(batch) < self.callers and events
                   and events[0][1] == _ARRIVE):
                batch.append(heapq.heappop(events)[3])
            clock = max(clock, batch[-1].start)
            self.recorder.advance(clock)
            duration, placed = self._round(batch)
            clock += duration
            for request, instances in placed:
                if request.end is not None:
                    heapq.heappush(events, (max(request.end, clock),
                                            _DELETE,
                                            self._hold(request, instances),
                                            None))
        self.recorder.advance(self.horizon)

    def _hold(self, request, instances):
        """Keep ``request``'s ``instances`` ([(uuid, row)]) until its
        deletion event comes; their number among those held.

        Kept flat, in lists that only grow (one entry a request or an
        instance, no object of its own): the pending deletions of a
        long run number in the hundreds of thousands, and as tuples and
        lists each would be one more object for the cyclic collector to
        count and walk, its passes landing inside the decisions timed
        (at 10,000 hosts, a third of those over 3x the median)."""
        held = self._held
        held.requests.append(request)
        held.starts.append(len(held.rows))
        held.counts.append(len(instances))
        for instance_uuid, row in instances:
            held.uuids.append(instance_uuid)
            held.rows.append(row)
        return len(held.requests) - 1

    def _round(self, batch):
        """Answer ``batch`` concurrently; ``(simulated seconds, [(request,
        [(uuid, row)])])``."""
        busy = [0.0] * len(self.drivers)
        placed = []
        used = range(min(len(batch), len(self.drivers)))
        for worker in used:
            self._sync(worker)
        for index, request in enumerate(batch):
            worker = index % len(self.drivers)
            instances, took = self._decide(self.drivers[worker], request)
            busy[worker] += took
            self.recorder.decided(busy[worker], request, instances,
                                  self.drivers[worker].last_no_valid_host)
            if instances:
                for _uuid, row in instances:
                    self._changed(row, worker)
                placed.append((request, instances))
        return max(busy), placed

    def _sync(self, worker):
        dirty = self._dirty[worker]
        if dirty:
            self.drivers[worker].host_manager.refresh_nodes(
                [int(self.node_ids[row]) for row in dirty])
            dirty.clear()

    def _changed(self, row, by_worker=None):
        for worker, dirty in enumerate(self._dirty):
            if worker != by_worker:
                dirty.add(row)

    # -- decisions and deletions ------------------------------------------

    def _flavor(self, request):
        """The request's Flavor object, built once per size (nothing
        writes to a spec's flavor)."""
        key = (request.flavor, request.vcpus, request.memory_mb,
               request.disk_gb, tuple(sorted(request.extra_specs.items())))
        flavor = self._flavors.get(key)
        if flavor is None:
            flavor = self._flavors[key] = request_spec.Flavor(
                name=request.flavor, flavorid=request.flavor,
                vcpus=request.vcpus, memory_mb=request.memory_mb,
                root_gb=request.disk_gb, extra_specs=request.extra_specs)
        return flavor

    def _spec(self, request, uuids):
        flavor = self._flavor(request)
        spec = request_spec.RequestSpec(
            flavor=flavor, num_instances=request.count,
            project_id=request.tenant)
        if request.policy:
            group_uuid = self._new_uuid()
            if self.usage is not None:
                self.usage.add_group(group_uuid, request.policy)
            else:
                with db_api.api_writer() as session:
                    group = instance_groups.create(
                        session, request.id, request.policy,
                        project_id=request.tenant, uuid=group_uuid)
                    instance_groups.add_members(session, group.id, uuids)
            spec.instance_group = request_spec.InstanceGroup(
                uuid=group_uuid, name=request.id, policy=request.policy,
                members=[], hosts=[])
        return spec

    def _decide(self, driver, request):
        """Place ``request``: ``([(uuid, row)], seconds)``, [] if no
        valid host; the seconds are those of ``select_destinations``."""
        uuids = [self._new_uuid() for _ in range(request.count)]
        spec = self._spec(request, uuids)
        driver.last_no_valid_host = None
        started = time.perf_counter()
        try:
            selections = driver.select_destinations(None, spec, uuids)
        except exception.NoValidHost:
            return [], time.perf_counter() - started
        took = time.perf_counter() - started
        instances = []
        for instance_uuid, alternatives in zip(uuids, selections):
            row = self.row_by_uuid[alternatives[0].compute_node_uuid]
            self.recorder.take(row, request, 1)
            instances.append((instance_uuid, row))
        return instances, took

    def _delete(self, index):
        """Delete the instances held :meth:`_hold`'s ``index``-th."""
        held = self._held
        request = held.requests[index]
        start = held.starts[index]
        end = start + held.counts[index]
        instances = list(zip(held.uuids[start:end], held.rows[start:end]))
        # (The uuids' strings freed; the slots stay, numbered.)
        held.uuids[start:end] = [None] * (end - start)
        held.requests[index] = None
        pairs = [(instance_uuid, int(self.node_ids[row]))
                 for instance_uuid, row in instances]
        if self.usage is not None:
            self.usage.release(pairs)
        else:
            claims.release_in_sql(pairs)
        for driver in self.drivers:
            driver.host_manager.forget_instances(pairs)
        for _uuid, row in instances:
            self.recorder.take(row, request, -1)
            self._changed(row)
