"""What Gantt reports is true when spawns fail, with and without an outage.

2 conductors, 2 schedulers and 4 fake computes on a real broker and
PostgreSQL; 30% of spawns fail (``[fake_virt] build_failure_rate``) and
each spawn takes longer than the computes' instance sync interval, so
that syncs run while builds spawn. Then:

* 0 phantom ACTIVE: every ACTIVE instance runs on its compute (the
  computes' own last word, ``compute_reports``, taken after the end), and
  every instance a compute runs is ACTIVE there;
* every failed spawn (as the computes' logs name them) ends ACTIVE on
  another host (rescheduled to an alternate) or ERROR with a fault;
* 0 claims left by failed or deleted builds, and ``gantt-manage db check``
  is clean;
* with a broker node stopped mid-load, the same, and nothing lost or
  stuck (:mod:`tests.functional.test_faults`' targets).

The figures (ACTIVE, ERROR, failed spawns, rescheduled, phantom ACTIVE,
claims left) are printed with ``-s`` or added to the report with
``-rA``. ``GANTT_SPAWN_FAILURE_BUILDS`` sets how many builds (400)::

    GANTT_SPAWN_FAILURE_BUILDS=1000 pytest -rA -m faults \\
        tests/functional/test_spawn_failures.py
"""

import collections
import json
import os
import re
import time

import pytest

from tests.fixtures import rabbitmq
from tests.functional import checks
from tests.functional import cluster as cluster_mod
from tests.functional import test_faults

pytestmark = [pytest.mark.functional, pytest.mark.faults]

BUILDS = int(os.environ.get('GANTT_SPAWN_FAILURE_BUILDS', '400'))
SUBMIT_SECONDS = max(12, BUILDS // 40)
FAILURE_RATE = 0.3
# Spawns of 3 s, syncs every 2 s: a sync runs during most spawns. A
# build message lost on the way is found after two syncs (4 s).
FAILING_CONF = '''\
[DEFAULT]
sync_power_state_interval = 2
[fake_virt]
build_failure_rate = %s
spawn_time = 3
''' % FAILURE_RATE
_FAILED = re.compile(r'Build of ([0-9a-f-]{36}) failed: fake spawn failure')


def start_failing_cluster(c):
    """:func:`test_faults.start_cluster`, with computes whose spawns
    fail at :data:`FAILURE_RATE`."""
    daemons = [c.start_conductor_with_conf(
        'conductor-%d' % index, test_faults.DB_RETRY_CONF + FAILING_CONF)
        for index in (1, 2)]
    for host in test_faults.COMPUTES:
        daemons.append(c.start_compute(
            host, extra_conf=test_faults.DB_RETRY_CONF + FAILING_CONF,
            **test_faults.BIG))
    c.wait_for_computes(test_faults.COMPUTES)
    daemons += [c.start_scheduler('sched-%d' % index,
                                  extra_conf=test_faults.DB_RETRY_CONF)
                for index in (1, 2)]
    c.discover_hosts()
    return daemons


def failed_spawns(c):
    """``{uuid: [hosts]}`` of every spawn a compute failed."""
    failed = collections.defaultdict(list)
    for process in c.processes:
        if process.name in test_faults.COMPUTES:
            for uuid in _FAILED.findall(process.log()):
                failed[uuid].append(process.name)
    return failed


def reports_after(c, moment):
    """Every compute's last report, once each is newer than ``moment``
    (a database timestamp): ``{host: (running uuids, spawning)}``."""
    def fresh():
        rows = c.query('SELECT host, reported_at FROM compute_reports')
        return len(rows) == len(test_faults.COMPUTES) and all(
            row.reported_at > moment for row in rows)

    c.wait_until(fresh, 30, 'every compute to sync its instances')
    return {row.host: (set(_json(row.running)), set(_json(row.spawning)))
            for row in c.query('SELECT host, running, spawning '
                               'FROM compute_reports')}


def _json(text):
    return json.loads(text) if text else {}


def truth_figures(c, load):
    """The run's figures: test_faults' and those of this module."""
    figures = test_faults.outcome(c, load)
    rows = {row.uuid: row for row in c.instances()}
    now = c.query('SELECT max(updated_at) AS at FROM instances')[0].at
    reports = reports_after(c, now)
    running_on = {uuid: host for host, (running, _spawning)
                  in reports.items() for uuid in running}
    phantom = sorted(uuid for uuid, row in rows.items()
                     if row.vm_state == 'active'
                     and running_on.get(uuid) != row.host)
    misreported = sorted(
        uuid for uuid, host in running_on.items()
        if uuid not in rows or rows[uuid].vm_state != 'active'
        or rows[uuid].host != host)
    failed = failed_spawns(c)
    unsettled = sorted(
        uuid for uuid, hosts in failed.items()
        if uuid in rows and not (
            (rows[uuid].vm_state == 'active'
             and rows[uuid].host not in hosts)
            or (rows[uuid].vm_state == 'error' and rows[uuid].fault)))
    figures.update({
        'failed spawns': sum(len(hosts) for hosts in failed.values()),
        'instances with a failed spawn': len(failed),
        'rescheduled and active': sum(
            1 for uuid in failed if rows.get(uuid) is not None
            and rows[uuid].vm_state == 'active'),
        'phantom active': len(phantom), 'phantom examples': phantom[:5],
        'run but not active there': len(misreported),
        'failed spawn neither rescheduled nor error': len(unsettled),
        'claims left': figures['leaked'],
        'lost build messages moved to an alternate': sum(
            process.log().count('which never heard of it')
            for process in c.processes if process.name.startswith(
                'conductor')),
    })
    return figures


def assert_true_state(request, c, daemons, title, figures):
    test_faults.report(request, title, figures)
    problems = test_faults.problems_in(figures)
    for name in ('phantom active', 'run but not active there',
                 'failed spawn neither rescheduled nor error'):
        if figures[name]:
            problems.append('%d %s' % (figures[name], name))
    if not figures['failed spawns']:
        problems.append('no spawn failed: the test tested nothing')
    assert not problems, '%s: %s' % (title, '; '.join(problems))
    checks.assert_usage_matches_servers(c)
    checks.assert_db_check_passes(c)


def run_load(c, daemons, outage=None):
    load = test_faults.Load(builds=BUILDS, seconds=SUBMIT_SECONDS)
    load.start()
    down = 0.0
    if outage is not None:
        time.sleep(test_faults.OUTAGE_AFTER_SECONDS)
        down = outage()
    back_at = time.monotonic()
    load.join()
    figures = {'builds': BUILDS, 'spawn failure rate': FAILURE_RATE,
               'service away s': round(down, 1),
               'converged after s': test_faults.wait_to_converge(
                   c, load.accepted, back_at)}
    figures.update(truth_figures(c, load))
    figures['dead daemons'] = [process.name for process in daemons
                               if not process.alive()]
    del figures['stuck uuids']
    return figures


def test_failed_spawns_end_rescheduled_or_in_error(tmp_path, rpc_transport,
                                                   request):
    with cluster_mod.Cluster(tmp_path, 'postgresql',
                             extra_conf=test_faults.DB_RETRY_CONF) as c:
        daemons = start_failing_cluster(c)
        with test_faults.client(rpc_transport, c):
            figures = run_load(c, daemons)
        assert_true_state(request, c, daemons,
                          '%d builds, %d%% of spawns failing'
                          % (BUILDS, FAILURE_RATE * 100), figures)


def test_failed_spawns_with_the_broker_stopped_mid_load(
        tmp_path, rpc_transport, request):
    with rabbitmq.node(tmp_path / 'rabbit') as node, cluster_mod.Cluster(
            tmp_path, 'postgresql', transport_url=node.url,
            extra_conf=test_faults.DB_RETRY_CONF
            + test_faults.RABBIT_RETRY_CONF) as c:
        daemons = start_failing_cluster(c)
        with test_faults.client(rpc_transport, c):
            figures = run_load(c, daemons,
                               test_faults._broker_restart(node))
        assert_true_state(request, c, daemons,
                          '%d builds, %d%% of spawns failing, RabbitMQ node '
                          'stopped %ds' % (BUILDS, FAILURE_RATE * 100,
                                           test_faults.BROKER_DOWNTIME_SECONDS),
                          figures)
