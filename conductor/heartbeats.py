"""Heartbeats of many services in few transactions.

Every compute sends the conductor a heartbeat each ``[DEFAULT]
report_interval`` seconds (10): 100,000 computes would be 10,000
single-row transactions a second. The conductor's RPC threads hand their
heartbeats to a :class:`HeartbeatBatcher` instead: one caller at a time
writes whatever heartbeats are waiting, up to :data:`MAX_BATCH`, in one
transaction (one UPDATE per binary, and one SELECT for the answers),
while the callers that arrive meanwhile wait for the next one. An idle
conductor writes each heartbeat at once, alone; a busy one writes them in
batches as large as its load, with no timer and no thread of its own::

    batcher = HeartbeatBatcher()
    disabled = batcher.report('compute-1', 'gantt-compute', 'compute',
                              version=1)

Each caller gets its own service's ``disabled`` flag, or the error of the
transaction its heartbeat was in (the compute logs it and reports again
at its next interval; nothing else depends on one heartbeat).
"""

import collections
import threading

from scheduler.db import api as db_api
from scheduler.db import services as db_services
from scheduler.notifications import service as service_notes

# Heartbeats written in one transaction at most (bounds the IN lists).
MAX_BATCH = 500


class _Heartbeat:
    __slots__ = ('host', 'binary', 'topic', 'version', 'done', 'disabled',
                 'error')

    def __init__(self, host, binary, topic, version):
        self.host = host
        self.binary = binary
        self.topic = topic
        self.version = version
        self.done = False
        self.disabled = None
        self.error = None


class HeartbeatBatcher:
    """Group commit of heartbeats; see the module docstring."""

    def __init__(self):
        self._cond = threading.Condition()
        self._pending = collections.deque()
        self._writing = False
        self.stats = {'heartbeats': 0, 'transactions': 0}

    def report(self, host, binary, topic, version=None):
        """Record the heartbeat (of a service running ``version``, if it
        said); the service's ``disabled`` flag."""
        heartbeat = _Heartbeat(host, binary, topic, version)
        with self._cond:
            self._pending.append(heartbeat)
            while not heartbeat.done:
                if self._writing:
                    self._cond.wait()
                    continue
                batch = [self._pending.popleft() for _ in
                         range(min(MAX_BATCH, len(self._pending)))]
                self._writing = True
                self._cond.release()
                try:
                    self._write(batch)
                finally:
                    self._cond.acquire()
                    self._writing = False
                    self._cond.notify_all()
        if heartbeat.error is not None:
            raise heartbeat.error
        return heartbeat.disabled

    def _write(self, batch):
        """Write the batch in one transaction; every heartbeat in it is
        done afterwards, with its answer or the transaction's error."""
        try:
            by_service = collections.defaultdict(set)
            for heartbeat in batch:
                by_service[heartbeat.binary, heartbeat.topic,
                           heartbeat.version].add(heartbeat.host)
            answers = {}
            created = []
            with db_api.writer() as session:
                for (binary, topic, version), hosts in by_service.items():
                    found = db_services.heartbeat_many(session, binary,
                                                       topic, hosts, version)
                    for host in hosts - set(found):
                        # First report: the row is created.
                        row = db_services.report_alive(session, host,
                                                       binary, topic, version)
                        found[host] = bool(row.disabled)
                        if row.report_count == 1:
                            created.append(row)
                    for host, disabled in found.items():
                        answers[host, binary] = disabled
            for heartbeat in batch:
                heartbeat.disabled = answers[heartbeat.host,
                                             heartbeat.binary]
            for row in created:
                service_notes.service_action(None, 'create', row,
                                             'gantt-conductor')
        except Exception as error:
            for heartbeat in batch:
                heartbeat.error = error
        finally:
            self.stats['heartbeats'] += len(batch)
            self.stats['transactions'] += 1
            for heartbeat in batch:
                heartbeat.done = True
