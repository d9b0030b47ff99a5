"""The benchmarks' rig: ``--set SECTION.OPTION=VALUE`` options for the
scheduler daemons, a SIGTERM that still cleans up, and the echo server's
committed write and claim."""

import argparse
import json
import os
import signal
import sys
import threading
import time
import uuid

from oslo_config import cfg
import pytest
import sqlalchemy as sa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..',
                                'benchmarks'))
import rig  # noqa: E402

from scheduler.db import models  # noqa: E402
from tests.fixtures import databases  # noqa: E402


def test_an_option_is_read_as_section_option_and_value():
    assert rig.parse_option('filter_scheduler.rank_ahead=false') == (
        'filter_scheduler', 'rank_ahead', 'false')
    assert rig.parse_option(' DEFAULT.debug = true ') == (
        'DEFAULT', 'debug', 'true')
    # The value may hold dots and equals signs.
    assert rig.parse_option('database.connection=a=b.c') == (
        'database', 'connection', 'a=b.c')


@pytest.mark.parametrize('text', ['rank_ahead=false', 'x.y', '.y=1',
                                  'x.=1', ''])
def test_anything_else_is_refused_with_the_form_expected(text):
    with pytest.raises(argparse.ArgumentTypeError,
                       match='SECTION.OPTION=VALUE'):
        rig.parse_option(text)


def test_the_options_follow_the_benchmarks_own_in_the_daemons_file(
        tmp_path):
    path = tmp_path / 'scheduler.conf'
    path.write_text(rig.DAEMON_CONF + rig.options_conf([
        ('filter_scheduler', 'rank_ahead', 'false'),
        ('scheduler', 'host_state_refresh_interval', '2')]))
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.BoolOpt('rank_ahead', default=True),
                      group='filter_scheduler')
    conf.register_opt(cfg.FloatOpt('host_state_refresh_interval'),
                      group='scheduler')
    conf(['--config-file', str(path)], project='gantt-bench-test')
    assert conf.filter_scheduler.rank_ahead is False
    # The benchmark sets 0.5; given again, the later value wins.
    assert conf.scheduler.host_state_refresh_interval == 2.0


def test_sigterm_ends_the_benchmark_through_its_with_blocks():
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    cleaned = []
    try:
        replaced = rig.exit_on_sigterm()
        assert replaced is signal.SIG_DFL
        # (Checked before the signal is sent: the default would end the
        # test run.)
        assert signal.getsignal(signal.SIGTERM) is rig._terminated
        with pytest.raises(SystemExit) as ended:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                # The handler runs at the next instruction of this thread.
                for _ in range(1000):
                    pass
            finally:
                cleaned.append(True)
        assert ended.value.code == 128 + signal.SIGTERM
        assert cleaned == [True]
        # Someone else's handler is left alone.
        assert rig.exit_on_sigterm() is None
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_sigterm_is_left_alone_outside_the_main_thread():
    found = []
    thread = threading.Thread(target=lambda: found.append(
        rig.exit_on_sigterm()))
    thread.start()
    thread.join()
    assert found == [None]


@pytest.mark.parametrize('backend', ['postgresql', 'mariadb'])
def test_echo_commit_commits_one_row_per_call(backend):
    """The latency benchmark's floor of a durable write: each call is one
    committed UPDATE, which another connection sees at once."""
    url = databases.create_database(backend)
    engine = sa.create_engine(url)
    try:
        rig._commit_table(engine)
        rig._commit_table(engine)   # a second echo server finds it made
        committer = rig._Committer(engine)
        for _ in range(3):
            committer.commit_one()
        with engine.connect() as other:
            counters = dict(other.execute(sa.text(
                'SELECT id, counter FROM %s' % rig.COMMIT_TABLE)).all())
        assert len(counters) == rig.COMMIT_ROWS
        assert [counters[number] for number in (1, 2, 3)] == [1, 1, 1]
        assert sum(counters.values()) == 3
        committer.connection.close()
    finally:
        engine.dispose()
        databases.drop_database(url)


@pytest.mark.parametrize('backend', ['postgresql', 'mariadb'])
def test_echo_claim_claims_as_the_scheduler_and_answers_as_a_select(
        backend, config):
    """The floor of a select that claims: each call is the scheduler's
    own SQL claim on the next node (the allocation recorded, the node's
    usage raised), answered with three Selections, the first claimed; a
    claim that does not fit is refused and writes nothing."""
    from scheduler.db import api as db_api
    from scheduler import exception
    from scheduler import objects
    objects.register_all()
    nodes, instances = (models.ComputeNode.__table__,
                        models.Instance.__table__)
    uuids = [str(uuid.uuid4()) for _ in range(3)]
    with databases.migrated_database(backend, config):
        engine = db_api.get_engine()
        now = models.utcnow()
        with engine.begin() as connection:
            connection.execute(sa.insert(nodes), [
                {'uuid': str(uuid.uuid4()), 'host': 'h%d' % number,
                 'hypervisor_hostname': 'h%d' % number, 'vcpus': 4,
                 'memory_mb': 4096, 'local_gb': 100, 'mapped': True,
                 'generation': 1, 'created_at': now, 'updated_at': now}
                for number in range(3)])
            connection.execute(sa.insert(instances), [
                {'uuid': value, 'vm_state': 'building',
                 'task_state': 'scheduling', 'created_at': now,
                 'updated_at': now, 'deleted': 0} for value in uuids])
        claimer = rig._Claimer(engine)
        try:
            first = claimer.claim(rig._spec((1, 512, 1)), uuids[0])
            second = claimer.claim(rig._spec((2, 1024, 1)), uuids[1])
            with pytest.raises(exception.NoValidHost):
                claimer.claim(rig._spec((1, 8192, 1)), uuids[2])
        finally:
            claimer.close()
        with engine.connect() as connection:
            used = {row.uuid: (row.vcpus_used, row.memory_mb_used)
                    for row in connection.execute(sa.select(
                        nodes.c.uuid, nodes.c.vcpus_used,
                        nodes.c.memory_mb_used))}
            held = dict(connection.execute(sa.select(
                models.Allocation.consumer_uuid,
                models.Allocation.compute_node_id)).all())
        names = dict((row.uuid, row.id) for row in claimer.nodes)
    for answer in (first, second):
        assert len(answer) == 1 and len(answer[0]) == 3
        assert [item.claimed for item in answer[0]] == [True, False, False]
        assert len({item.compute_node_uuid for item in answer[0]}) == 3
    claimed = [first[0][0].compute_node_uuid, second[0][0].compute_node_uuid]
    assert claimed[0] != claimed[1]      # the next node in turn
    assert used[claimed[0]] == (1, 512) and used[claimed[1]] == (2, 1024)
    assert sorted(used.values()) == [(0, 0), (1, 512), (2, 1024)]
    assert held == {uuids[0]: names[claimed[0]],
                    uuids[1]: names[claimed[1]]}
    assert json.loads(first[0][1].allocation_request) == {
        'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1}


def test_calls_in_turns_take_blocks_of_each_kind_until_all_are_made():
    items = rig._in_turns({'select': ['u1', 'u2', 'u3'], 'echo': 5}, 2)
    assert [kind for kind, _ in items] == [
        'select', 'select', 'echo', 'echo', 'select', 'echo', 'echo',
        'echo']
    # Each call keeps what it sends: the instance (with the benchmark's
    # flavor), or nothing for an echo.
    assert [item for kind, item in items if kind == 'select'] == [
        ('u1', rig.FLAVOR), ('u2', rig.FLAVOR), ('u3', rig.FLAVOR)]
    assert {item for kind, item in items if kind == 'echo'} == {None}


def test_ab_turns_swap_base_and_this_and_end_with_the_echo():
    import ab
    base = ['b%d' % number for number in range(25)]
    this = ['t%d' % number for number in range(25)]
    items = ab._turns(base, this, 25)
    kinds = [kind for kind, _uuid in items]
    assert kinds == (['base'] * 10 + ['this'] * 10 + ['echo'] * 10
                     + ['this'] * 10 + ['base'] * 10 + ['echo'] * 10
                     + ['base'] * 5 + ['this'] * 5 + ['echo'] * 5)
    # Every instance once, each to its own daemon.
    assert [uuid for kind, uuid in items if kind == 'base'] == base
    assert [uuid for kind, uuid in items if kind == 'this'] == this


def test_ab_base_daemon_imports_the_other_checkout_first(tmp_path):
    import ab
    env = ab.base_env(str(tmp_path), {'PYTHONPATH': '/x' + os.pathsep})
    assert env['PYTHONPATH'].split(os.pathsep) == [str(tmp_path), '/x']
    assert ab.base_env('.', {})['PYTHONPATH'] == os.path.abspath('.')


def test_ab_refuses_a_base_without_the_scheduler(tmp_path, capsys):
    import ab
    with pytest.raises(SystemExit):
        ab.main(['--base', str(tmp_path)])
    assert 'holds no scheduler package' in capsys.readouterr().err


def test_the_process_table_gives_each_process_its_parent_and_cpu_time():
    spent = time.process_time()
    deadline = spent + 0.05
    while time.process_time() < deadline:   # some CPU time to find
        pass
    before = time.process_time()
    mine = [entry for entry in rig.cluster_mod.process_table()
            if entry[0] == os.getpid()]
    assert len(mine) == 1
    pid, parent, name, seconds = mine[0]
    assert parent == os.getppid()
    assert name and ')' not in name
    # Whole clock ticks (user and system, each rounded down) of what
    # the interpreter counted just before.
    assert before - 2.0 / os.sysconf('SC_CLK_TCK') <= seconds <= (
        time.process_time())


def test_rpc_names_the_default_worker_count_and_the_best_in_the_run():
    import rpc
    from scheduler.cmd import scheduler as scheduler_cmd
    note = rpc._default_workers_note({1: [570 / 660, 580 / 720],
                                      2: [490 / 740, 610 / 700]})
    cpus = scheduler_cmd.usable_cpus()
    assert note.startswith(
        "the daemon's default here (workers unset, %d usable CPUs): %d "
        "worker(s);" % (cpus, scheduler_cmd.default_workers(cpus)))
    # Each count's rows averaged against their own echo: 0.83x, 0.77x.
    assert note.endswith('in this run: 1 worker(s) (1: 0.83x, 2: 0.77x)')


def test_rpc_compares_worker_counts_raw_and_against_each_rows_echo():
    """Two rows run minutes apart: the placements per second, and the
    same over each row's own echo, which moved with the machine."""
    import rpc
    one = ('placements/s vs echo calls/s, 1 worker(s)', 244.9, 320.2, '')
    two = ('placements/s vs echo calls/s, 2 worker(s)', 235.6, 292.2, '')
    assert rpc._worker_pair_line(one, two) == (
        "placements/s, 2 worker(s) against 1 worker(s): 0.96x; against "
        "each row's own echo: 1.05x (target: >= 1x)")
