"""gantt-sim end to end: the real driver over a scratch database."""

import glob
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import numpy as np
import pytest
import sqlalchemy as sa

from scheduler.cmd import sim
from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.sim import cloud as sim_cloud
from scheduler.sim import engine
from scheduler.sim import metrics
from scheduler.sim import plots
from scheduler.sim import workload

CLOUD = '''
[[hosts]]
name = "small"
count = 1
vcpus = 16
memory_mb = 4096
disk_gb = 1000

[[hosts]]
name = "medium"
count = 1
vcpus = 16
memory_mb = 8192
disk_gb = 1000

[[hosts]]
name = "large"
count = 1
vcpus = 16
memory_mb = 16384
disk_gb = 1000
'''
# Five requests of 3 GB, then one of 10 GB, one second apart.
TRACE = ('id,tenant,flavor,vcpus,memory_mb,disk_gb,start,end\n'
         + ''.join('r%d,t,,1,3072,10,%d,\n' % (n, n) for n in range(1, 6))
         + 'r6,t,,1,10240,10,6,\n')
CONF = '''[DEFAULT]
ram_allocation_ratio = 1.0
[filter_scheduler]
weight_classes = RAMWeigher
ram_weight_multiplier = %s
'''


@pytest.fixture
def files(tmp_path, config):
    paths = {}
    for name, text in (('cloud.toml', CLOUD), ('trace.csv', TRACE),
                       ('spread.conf', CONF % '1.0'),
                       ('pack.conf', CONF % '-1.0')):
        paths[name] = str(tmp_path / name)
        with open(paths[name], 'w') as stream:
            stream.write(text)
    return paths


def _run(argv, conf):
    args = sim._parser().parse_args(argv)
    cloud, requests, _runs = sim._inputs(args)
    return sim.run_once(cloud, requests, conf, args)


def test_spread_and_pack_place_as_worked_out_by_hand(files):
    argv = ['--cloud', files['cloud.toml'], '--trace', files['trace.csv']]
    spread_run = _run(argv, files['spread.conf'])
    pack_run = _run(argv, files['pack.conf'])
    spread, pack = spread_run.placements, pack_run.placements
    # Spread: most free RAM first. Free (MB) small/medium/large start at
    # 4096/8192/16384: large 13312, 10240, 7168; medium (8192) 5120;
    # large (7168) 4096; then 10 GB fits nowhere.
    assert [spread['r%d' % n] for n in range(1, 7)] == [
        ['large-000001']] * 3 + [['medium-000001'], ['large-000001'], []]
    # Pack: least free RAM that still fits: small 1024, medium 5120,
    # 2048, large 13312, 10240, and 10 GB fills the large host.
    assert [pack['r%d' % n] for n in range(1, 7)] == [
        ['small-000001'], ['medium-000001'], ['medium-000001'],
        ['large-000001'], ['large-000001'], ['large-000001']]
    # Spread left the small host empty; pack used all three and filled
    # the large one (3 + 3 + 10 GB of 16 GB); spread's fullest is the
    # large one too, 4 x 3 GB of 16 GB.
    assert (spread_run.hosts_in_use, pack_run.hosts_in_use) == (2, 3)
    assert pack_run.final_fill[2] == 1.0
    assert spread_run.final_fill[2] == pytest.approx(12 / 16)


def test_no_valid_host_names_the_filter_and_peak_utilisation(files):
    argv = ['--cloud', files['cloud.toml'], '--trace', files['trace.csv']]
    result = _run(argv, files['spread.conf'])
    assert result.no_valid_host == {'RamFilter': 1}
    assert result.first_no_valid_host == 6.0
    # 15 GB of 28 GB placed before r6 failed.
    assert result.peak_before_no_valid_host[1] == pytest.approx(
        15 * 1024 / (28 * 1024))


def test_a_seed_gives_the_same_summary_twice(config):
    argv = ['--hosts', '12', '--hours', '12', '--seed', '5',
            '--callers', '4', '--workers', '2']
    texts = []
    for global_seed in (1, 2):
        # The run draws from its own seeded sources, not the global one.
        random.seed(global_seed)
        texts.append(metrics.summary(_run(argv, None), timings=False))
    assert texts[0] == texts[1]
    assert 'instance(s) placed' in texts[0]
    other = metrics.summary(_run(argv[:-6] + ['--seed', '6'], None),
                            timings=False)
    assert other != texts[0]


def test_plots_are_written_and_not_empty(files, tmp_path):
    argv = ['--cloud', files['cloud.toml'], '--trace', files['trace.csv']]
    result = _run(argv, files['spread.conf'])
    paths = plots.draw_all(str(tmp_path / 'out'), [('spread', result)])
    assert [os.path.basename(p) for p in paths] == list(plots.FILES)
    for path in paths:
        with open(path, 'rb') as stream:
            assert stream.read(8) == b'\x89PNG\r\n\x1a\n'
        assert os.path.getsize(path) > 1000


def test_compare_runs_both_configurations(files, tmp_path, capsys):
    out = tmp_path / 'cmp'
    code = sim.main(['--cloud', files['cloud.toml'], '--trace',
                     files['trace.csv'], '--compare', files['spread.conf'],
                     files['pack.conf'], '--output', str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert '== spread: 3 hosts' in text and '== pack: 3 hosts' in text
    # Spread fails r6, pack places it.
    assert '1 request(s) with no valid host' in text
    assert '0 request(s) with no valid host' in text
    assert sorted(os.listdir(out)) == sorted(plots.FILES)


@pytest.mark.parametrize('name, text, message', [
    ('trace.csv', TRACE.replace('r3,t,,1,3072', 'r3,t,,1,3O72'),
     "row 4, field memory_mb: '3O72' is not an integer"),
    ('cloud.toml', CLOUD.replace('count = 1', 'count = -1', 1),
     'hosts[0].count: must be an integer >= 1'),
    ('spread.conf', CONF % 'heavy', 'ram_weight_multiplier'),
    ('cloud.toml', CLOUD + '[[flavors]]\nname = "p"\nvcpus = 1\n'
     'memory_mb = 512\ndisk_gb = 1\nextra_specs = {"hw:cpu_policy" = '
     '"pinned"}\n', 'cloud.toml: flavors[0].extra_specs: Invalid NUMA '
     "request: hw:cpu_policy='pinned'"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(
        files, tmp_path, capsys, name, text, message):
    with open(files[name], 'w') as stream:
        stream.write(text)
    out = tmp_path / 'out'
    code = sim.main(['--cloud', files['cloud.toml'], '--trace',
                     files['trace.csv'], '--config-file',
                     files['spread.conf'], '--output', str(out)])
    assert code == 2
    error = capsys.readouterr().err
    assert error.count('\n') == 1 and message in error, error
    assert not out.exists()


PINNED_CLOUD = '''
[[hosts]]
name = "numa"
count = 1
disk_gb = 1000

[[hosts.numa_topology.cells]]
id = 0
cpuset = [0, 1, 2, 3]
pcpuset = [4, 5, 6, 7]
memory_mb = 16384

[[flavors]]
name = "pinned"
vcpus = 2
memory_mb = 1024
disk_gb = 10
extra_specs = {"hw:cpu_policy" = "dedicated"}

[[flavors]]
name = "shared"
vcpus = 2
memory_mb = 1024
disk_gb = 10
'''
# Three pinned instances of 2 on a host with 4 dedicated CPUs, then one
# with floating vCPUs.
PINNED_TRACE = ('id,tenant,flavor,vcpus,memory_mb,disk_gb,start,end\n'
                'p1,t,pinned,,,,1,\np2,t,pinned,,,,2,\np3,t,pinned,,,,3,\n'
                's1,t,shared,,,,4,\n')


def test_pinned_flavors_take_pinned_cpus_until_numa_filter_refuses(
        database, config, tmp_path):
    filters = conf.CONF.filter_scheduler.enabled_filters
    config.config(enabled_filters=filters + ['NUMATopologyFilter'],
                  group='filter_scheduler')
    (tmp_path / 'cloud.toml').write_text(PINNED_CLOUD)
    (tmp_path / 'trace.csv').write_text(PINNED_TRACE)
    cloud = sim_cloud.load_cloud(str(tmp_path / 'cloud.toml'))
    requests = workload.read_csv(str(tmp_path / 'trace.csv'), cloud)
    sim_cloud.populate(cloud, random.Random(1))
    result = engine.Simulation(cloud, requests, seed=1).run()
    assert [result.placements[name] for name in ('p1', 'p2', 'p3', 's1')] \
        == [['numa-000001'], ['numa-000001'], [], ['numa-000001']]
    # Plenty of vCPUs (4 x 16) and RAM are left: the pinned CPUs ran out.
    assert result.no_valid_host == {'NUMATopologyFilter': 1}
    with db_api.reader() as session:
        usage = session.execute(sa.select(
            models.ComputeNode.numa_usage)).scalar_one()
    assert sorted(usage['cells'][0]['pinned_cpus']) == [4, 5, 6, 7]


class _SlowSimulation(engine.Simulation):
    """Real time passes between rounds (outside the timed decisions), as
    on a large cloud whose replay lasts minutes."""

    def _round(self, batch):
        time.sleep(0.07)
        return super()._round(batch)


def test_hosts_stay_up_through_a_replay_longer_than_service_down_time(
        database, config, tmp_path):
    # 2 simulated hours, a request every 144 s, each deleted after 5 min
    # (deletions make the cache re-read the nodes and their services);
    # the replay lasts over 3.5 s of real time, beyond service_down_time.
    config.config(service_down_time=2, report_interval=1)
    (tmp_path / 'cloud.toml').write_text(CLOUD)
    (tmp_path / 'trace.csv').write_text(
        'id,tenant,flavor,vcpus,memory_mb,disk_gb,start,end\n' + ''.join(
            'r%d,t,,1,512,1,%d,%d\n' % (n, 144 * n, 144 * n + 300)
            for n in range(50)))
    cloud = sim_cloud.load_cloud(str(tmp_path / 'cloud.toml'))
    requests = workload.read_csv(str(tmp_path / 'trace.csv'), cloud)
    sim_cloud.populate(cloud, random.Random(1))
    started = time.monotonic()
    result = _SlowSimulation(cloud, requests, seed=1).run()
    assert time.monotonic() - started > 3.5
    assert result.horizon > 7000
    assert result.no_valid_host == {}
    assert result.placed == 50


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """Where gantt-sim makes its scratch directory, watched: the entries
    seen there while a run replays."""
    directory = tmp_path / 'scratch'
    directory.mkdir()
    monkeypatch.setattr(tempfile, 'tempdir', str(directory))
    seen = []
    real_run = engine.Simulation.run

    def run(simulation):
        seen.extend(os.listdir(directory))
        return real_run(simulation)
    monkeypatch.setattr(engine.Simulation, 'run', run)
    return directory, seen


def test_the_scratch_database_goes_after_a_normal_end(files, scratch):
    directory, seen = scratch
    assert sim.main(['--cloud', files['cloud.toml'], '--trace',
                     files['trace.csv'], '--no-plots']) == 0
    assert len(seen) == 1 and seen[0].startswith('gantt-sim-')
    assert os.listdir(directory) == []


def _fail_in_the_third_round(monkeypatch):
    real_round = engine.Simulation._round
    rounds = []

    def failing_round(simulation, batch):
        rounds.append(batch)
        if len(rounds) == 3:
            raise RuntimeError('lost the database')
        return real_round(simulation, batch)
    monkeypatch.setattr(engine.Simulation, '_round', failing_round)


def test_the_scratch_database_goes_after_an_error(files, scratch,
                                                  monkeypatch):
    directory, seen = scratch
    _fail_in_the_third_round(monkeypatch)
    with pytest.raises(RuntimeError, match='lost the database'):
        sim.main(['--cloud', files['cloud.toml'], '--trace',
                  files['trace.csv'], '--no-plots'])
    assert seen and os.listdir(directory) == []


def test_a_database_url_is_left_empty_after_an_error(
        files, any_empty_database, monkeypatch):
    _fail_in_the_third_round(monkeypatch)
    with pytest.raises(RuntimeError, match='lost the database'):
        sim.main(['--cloud', files['cloud.toml'], '--trace',
                  files['trace.csv'], '--no-plots', '--database-url',
                  any_empty_database])
    engine_ = sa.create_engine(any_empty_database)
    try:
        assert sa.inspect(engine_).get_table_names() == []
    finally:
        engine_.dispose()


def test_ctrl_c_is_noted_then_raised_at_the_next_check_or_press():
    ctrl_c = sim.CtrlC()
    ctrl_c.check()                      # not pressed
    ctrl_c(signal.SIGINT, None)         # noted, not raised
    with pytest.raises(KeyboardInterrupt):
        ctrl_c.check()
    with pytest.raises(KeyboardInterrupt):
        ctrl_c(signal.SIGINT, None)     # a second press: at once


def test_ctrl_c_inside_a_claim_ends_the_run_after_that_decision(files):
    """SIGINT arrives while a claim's transaction is open: the claim
    commits, the run stops before the next decision (a claim cut short
    kept SQLite locked, and the clean-up after it waited)."""
    argv = ['--cloud', files['cloud.toml'], '--trace', files['trace.csv'],
            '--sql-claims']
    args = sim._parser().parse_args(argv)
    cloud, requests, _runs = sim._inputs(args)
    events = []

    def statement(conn, cursor, text, params, context, executemany):
        if text.startswith('INSERT INTO allocations'):
            events.append('claim')
            if events.count('claim') == 1:
                os.kill(os.getpid(), signal.SIGINT)

    def commit(conn):
        events.append('commit')

    ctrl_c = sim.CtrlC()
    previous = signal.signal(signal.SIGINT, ctrl_c)
    sa.event.listen(sa.engine.Engine, 'before_cursor_execute', statement)
    sa.event.listen(sa.engine.Engine, 'commit', commit)
    try:
        with pytest.raises(KeyboardInterrupt):
            sim.run_once(cloud, requests, files['spread.conf'], args,
                         ctrl_c)
    finally:
        sa.event.remove(sa.engine.Engine, 'before_cursor_execute', statement)
        sa.event.remove(sa.engine.Engine, 'commit', commit)
        signal.signal(signal.SIGINT, previous)
    assert ctrl_c.pressed
    claim = events.index('claim')
    assert events[claim:] == ['claim', 'commit'], events


def _assert_interrupted_and_clean(process, err, directory):
    assert process.returncode == 130, err
    assert err.endswith('gantt-sim: interrupted; the scratch database is '
                        'removed\n'), err
    assert os.listdir(directory) == []


@pytest.mark.parametrize('plots', ['--no-plots', '--output'],
                         ids=['no-plots', 'plots'])
def test_ctrl_c_removes_the_scratch_database_and_exits_130(tmp_path, plots):
    """With pictures asked for, the process forked to draw them ends too
    (it holds the pipes read here)."""
    directory = tmp_path / 'scratch'
    directory.mkdir()
    plots = [plots] if plots == '--no-plots' else [
        plots, str(tmp_path / 'out')]
    # -X faulthandler: a run that does not end after Ctrl-C is made to
    # say where each of its threads waits (SIGABRT), for the failure.
    process = subprocess.Popen(
        [sys.executable, '-X', 'faulthandler', '-m', 'scheduler.cmd.sim',
         '--hosts', '300', *plots],
        env=dict(os.environ, TMPDIR=str(directory)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not glob.glob(str(directory / 'gantt-sim-*' / 'sim.sqlite')):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        try:
            _out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            _out, err = process.communicate(timeout=30)
            pytest.fail('gantt-sim did not end 60 s after Ctrl-C; its '
                        'threads:\n%s' % err)
    finally:
        if process.poll() is None:
            process.kill()
        # Its pipes closed here (left open, a later test reports them).
        process.communicate()
    _assert_interrupted_and_clean(process, err, directory)


def test_an_error_raised_while_ctrl_c_unwinds_counts_as_the_interrupt():
    # A transaction cut by Ctrl-C fails its rollback with an error of its
    # own (SQLAlchemy's PendingRollbackError), the interrupt as context.
    def cleanup_fails():
        try:
            raise KeyboardInterrupt()
        finally:
            raise sa.exc.PendingRollbackError('rollback first')

    with pytest.raises(sa.exc.PendingRollbackError) as caught:
        cleanup_fails()
    assert sim._interrupted(caught.value)
    assert not sim._interrupted(ValueError('a real error'))
    wrapped = RuntimeError('outer')
    wrapped.__cause__ = ValueError('inner')
    assert not sim._interrupted(wrapped)


def test_instance_uuids_are_the_seeds_16_bytes_at_a_time(database):
    # Drawn in batches, the uuids are those of one draw of 16 bytes per
    # uuid: a seed's run places the same instances as before.
    simulation = engine.Simulation(sim_cloud.default_cloud(hosts=4), [],
                                   seed=5)
    count = engine._UUID_BATCH + 10
    drawn = [simulation._new_uuid() for _ in range(count)]
    generator = np.random.default_rng(5)
    assert drawn == [str(uuid.UUID(bytes=generator.bytes(16)))
                     for _ in range(count)]
    assert len(set(drawn)) == count


def _sim_command(*argv):
    return [sys.executable, '-X', 'faulthandler', '-m', 'scheduler.cmd.sim',
            *argv]


def _without_timings(text):
    """The lines of a summary that do not depend on the machine's
    speed."""
    return [line for line in text.splitlines()
            if ' ms' not in line and ' s of replay' not in line
            and 'wall time' not in line
            and not line.startswith('gantt-sim: ')]


def test_compare_runs_at_once_decide_as_one_after_the_other(files):
    """``--compare`` makes its runs in processes of their own, at once:
    the same decisions, summaries and order as one after the other."""
    outputs = {}
    for jobs in ('2', '1'):
        done = subprocess.run(_sim_command(
            '--hosts', '40', '--hours', '12', '--compare',
            files['spread.conf'], files['pack.conf'], '--no-plots',
            '--jobs', jobs), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        outputs[jobs] = done.stdout
    assert '2 runs at once' in outputs['2']
    assert 'at once' not in outputs['1']
    parallel = [line for line in _without_timings(outputs['2'])
                if 'at once' not in line]
    assert parallel == _without_timings(outputs['1'])
    assert [line.split(',')[0] for line in parallel
            if line.startswith('== ')] == ['== spread: 40 hosts',
                                           '== pack: 40 hosts']
    # The two configurations placed differently.
    assert len(set(line for line in parallel
                   if line.startswith('at the end'))) == 2


_EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..',
                         'etc', 'gantt-sim')


def _parallel_runs_under_way(directory, argv=()):
    """A ``--compare`` of two runs at once under ``TMPDIR=directory``,
    once both replay: ``(process, child pids)``. Each run would take
    minutes (over 100 times the default workload's instances)."""
    process = subprocess.Popen(
        _sim_command('--hosts', '300', '--fill', '150', '--compare',
                     os.path.join(_EXAMPLES, 'spread.conf'),
                     os.path.join(_EXAMPLES, 'pack.conf'),
                     '--no-plots', '--jobs', '2', *argv),
        env=dict(os.environ, TMPDIR=str(directory)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    pattern = str(directory / 'gantt-sim-runs-*' / 'gantt-sim-*'
                  / 'sim.sqlite')
    while len(glob.glob(pattern)) < 2:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail('the runs did not start: %s' % (
                process.communicate(),))
        time.sleep(0.05)
    time.sleep(0.5)
    with open('/proc/%d/task/%d/children' % (process.pid,
                                            process.pid)) as stream:
        children = [int(pid) for pid in stream.read().split()]
    assert len(children) == 2
    return process, children


def _gone(pid):
    """No process ``pid`` runs (a zombie, not reaped yet, does not)."""
    try:
        with open('/proc/%d/stat' % pid) as stream:
            return stream.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except FileNotFoundError:
        return True


def _ended(process, children):
    """The output of ``process`` if it and ``children`` end within 60 s
    (their runs would take minutes); else they are made to say where
    they wait (SIGABRT), and the test fails."""
    deadline = time.monotonic() + 60
    while not all(_gone(pid) for pid in children) \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        return process.communicate(
            timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for pid in children:
            if not _gone(pid):
                os.kill(pid, signal.SIGABRT)
    process.send_signal(signal.SIGABRT)
    _out, err = process.communicate(timeout=30)
    pytest.fail('gantt-sim did not end; its threads:\n%s' % err)


def test_ctrl_c_to_the_command_alone_stops_its_parallel_runs(tmp_path):
    """SIGINT to the command's process only (not to its group): it stops
    both runs, which remove their scratch databases; exit code 130."""
    directory = tmp_path / 'scratch'
    directory.mkdir()
    process, children = _parallel_runs_under_way(directory)
    try:
        process.send_signal(signal.SIGINT)
        _out, err = _ended(process, children)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    _assert_interrupted_and_clean(process, err, directory)
    assert all(_gone(pid) for pid in children)


def test_a_parallel_run_killed_fails_the_command_and_stops_the_other(
        tmp_path):
    directory = tmp_path / 'scratch'
    directory.mkdir()
    process, children = _parallel_runs_under_way(directory)
    try:
        os.kill(children[-1], signal.SIGKILL)
        _out, err = _ended(process, children)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    assert process.returncode == 1, err
    assert re.search(r'gantt-sim: the run (spread|pack) failed: it ended '
                     r'without an answer \(exit code -9\)\n$', err), err
    assert os.listdir(directory) == []
    assert all(_gone(pid) for pid in children)


def test_parallel_runs_whose_command_is_killed_stop_and_clean_up(tmp_path):
    """The command killed (SIGKILL: nothing of it runs again), its runs
    notice, stop, and remove their scratch databases and its directory."""
    directory = tmp_path / 'scratch'
    directory.mkdir()
    process, children = _parallel_runs_under_way(directory)
    try:
        process.kill()
        _ended(process, children)
    finally:
        process.communicate()
    assert os.listdir(directory) == []


@pytest.mark.parametrize('argv, message', [
    (['--jobs', '0'], '--jobs: must be at least 1'),
    (['--jobs', '2', '--database-url', 'sqlite://'],
     '--jobs: the runs of --database-url share its tables'),
])
def test_bad_jobs_are_one_line_exit_2(files, capsys, argv, message):
    code = sim.main(['--cloud', files['cloud.toml'], '--trace',
                     files['trace.csv'], '--compare', files['spread.conf'],
                     files['pack.conf'], '--no-plots', *argv])
    assert code == 2
    error = capsys.readouterr().err
    assert error.count('\n') == 1 and message in error, error


_DRAW = """
import sys
from scheduler.cmd import sim
from scheduler.sim import plots
if sys.argv[1] == 'no-matplotlib':
    sys.modules['matplotlib'] = None
if sys.argv[1] == 'failing-import':
    def no_pyplot():
        raise ImportError('matplotlib cannot start')
    plots._pyplot = no_pyplot
if sys.argv[1] == 'failing':
    def heatmap(*args):
        raise RuntimeError('no room for the heatmap')
    plots.heatmap = heatmap
    plots._HALVES = ((plots.utilisation, plots.latency),
                     (heatmap, plots.stranded))
code = sim.main(sys.argv[2:])
print('matplotlib here: %s' % ('matplotlib' in sys.modules))
sys.exit(code)
"""


def _draw(how, files, out):
    return subprocess.run(
        [sys.executable, '-c', _DRAW, how, '--cloud', files['cloud.toml'],
         '--trace', files['trace.csv'], '--output', str(out)],
        capture_output=True, text=True, timeout=300)


def test_the_pictures_are_drawn_by_processes_of_their_own(files, tmp_path):
    """On a machine of several CPUs the command forks a process that
    imports matplotlib while the runs replay, and draws the pictures
    there: the command's own process never imports it."""
    out = tmp_path / 'out'
    done = _draw('working', files, out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith('matplotlib here: False\n'), done.stdout
    assert ['wrote %s' % (out / name) for name in plots.FILES] == [
        line for line in done.stdout.splitlines()
        if line.startswith('wrote ')]
    for name in plots.FILES:
        with open(out / name, 'rb') as stream:
            assert stream.read(8) == b'\x89PNG\r\n\x1a\n'


@pytest.mark.parametrize('how, raised', [
    ('failing', 'RuntimeError: no room for the heatmap'),
    # Its process ended before it read the runs: no broken pipe.
    ('failing-import', 'ImportError: matplotlib cannot start'),
], ids=['a-picture-fails', 'the-plotter-cannot-start'])
def test_pictures_not_drawn_fail_the_command(files, tmp_path, how, raised):
    done = _draw(how, files, tmp_path / 'out')
    assert done.returncode == 1, done.stderr
    assert raised in done.stderr
    assert done.stderr.endswith(
        'gantt-sim: the pictures were not all drawn (the drawing process '
        'ended with exit code 1)\n'), done.stderr


def test_pictures_without_matplotlib_are_refused_before_the_runs(
        files, tmp_path):
    out = tmp_path / 'out'
    done = _draw('no-matplotlib', files, out)
    assert done.returncode == 2, done.stderr
    assert done.stderr.endswith(
        "gantt-sim: error: the pictures need matplotlib (pip install "
        "'gantt[sim]'), or give --no-plots\n"), done.stderr
    assert done.stderr.count('gantt-sim:') == 1, done.stderr
    assert 'instance(s) placed' not in done.stdout
    assert not out.exists()
