"""Two checkouts' select_destinations latency, measured in the same turns.

The latency of ``rpc.py`` moves by a tenth and more from one minute to
the next on the 2-CPU machine (benchmarks/README.md, session 32), so two
versions of the code measured one after the other cannot tell a change
of a few percent. Here two ``gantt-scheduler`` daemons run side by side:
"base" from another checkout of the code (``--base``: a directory such
as a git worktree of the commit to compare with), "this" from this one,
each on a database and RabbitMQ virtual host of its own holding the same
cloud (``--hosts``, 10,000; the same seed), beside the echo server of
``rig.py``. One caller makes ``--calls`` (300) calls of each kind in
turns of 10 (base, this, echo; base and this swap places every turn),
with 10 ms of rest between turns, as ``rpc.py``'s latency run does::

    git worktree add /tmp/gantt-base HEAD~1
    python benchmarks/ab.py --base /tmp/gantt-base
    git worktree remove --force /tmp/gantt-base

It prints each kind's p50, the two ratios to the echo's and this
checkout's p50 over the base's. The same code on both sides gives
0.98-1.01 (four runs on the development machine). ``--set
SECTION.OPTION=VALUE`` gives both daemons an option, ``--set-this`` this
checkout's only (the same code with and without an option).
"""

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rig  # noqa: E402

WARMUP = 30
KINDS = ('base', 'this', 'echo')


def _turns(base_uuids, this_uuids, calls):
    """``(kind, instance uuid or None)`` in turns of ``rig.TURN_BLOCK``;
    base and this swap places every turn."""
    block = rig.TURN_BLOCK
    items = []
    for turn, start in enumerate(range(0, calls, block)):
        base = [('base', uuid) for uuid in base_uuids[start:start + block]]
        this = [('this', uuid) for uuid in this_uuids[start:start + block]]
        echo = [('echo', None)] * len(base)
        items += (base + this if turn % 2 == 0 else this + base) + echo
    return items


def base_env(base, environ=os.environ):
    """The environment the base daemon adds to the rig's: the other
    checkout first on ``PYTHONPATH``, where its ``scheduler`` package is
    imported from (the rig's puts this checkout there)."""
    return {'PYTHONPATH': os.pathsep.join(
        [os.path.abspath(base)] + [path for path in environ.get(
            'PYTHONPATH', '').split(os.pathsep) if path])}


def _caller(conf_path, this_url, items, warm, queue):
    """The caller process: the base daemon through the process's own
    transport (``conf_path``'s), this checkout's through ``this_url``;
    puts ``[(kind, seconds)]`` on ``queue``."""
    import oslo_messaging as messaging

    from scheduler import conf
    from scheduler import context
    from scheduler import rpc
    from scheduler import rpcapi
    rig._init(conf_path)
    ctxt = context.get_admin_context()
    echo = rpc.get_client(messaging.Target(topic=rig.ECHO_TOPIC))
    payload = rpc.get_serializer().serialize_entity(
        ctxt, rig._spec(rig.FLAVOR))
    apis = {'base': rpcapi.SchedulerAPI(), 'this': rpcapi.SchedulerAPI()}
    apis['this'].client = rpc.get_client(
        messaging.Target(topic=rpcapi.RPC_TOPIC, version='1.0'),
        version_cap=conf.CONF.upgrade_levels.scheduler,
        transport=rpc.cell_transport(conf.CONF, this_url))
    spec = rig._spec(rig.FLAVOR)

    def call(kind, uuid):
        if kind == 'echo':
            echo.call(ctxt, 'echo', payload=payload)
        else:
            apis[kind].select_destinations(ctxt, spec, [uuid],
                                           return_objects=True,
                                           return_alternates=True)

    for kind, uuid in warm:
        call(kind, uuid)
    timed = []
    for kind, uuid in rig._resting(items, rig.TURN_PAUSE):
        started = time.perf_counter()
        call(kind, uuid)
        timed.append((kind, time.perf_counter() - started))
    queue.put(timed)
    rpc.cleanup()


def run(base, hosts, calls, options=(), this_options=()):
    workdirs = [tempfile.mkdtemp(prefix='gantt-bench-ab-')
                for _ in range(2)]
    try:
        with rig.Rig(workdirs[0], 'postgresql', hosts,
                     options=options) as base_rig, \
                rig.Rig(workdirs[1], 'postgresql', hosts,
                        options=tuple(options) + tuple(this_options)
                        ) as this_rig:
            daemons = [(base_rig, base_rig.cluster.start_scheduler(
                env=base_env(base))),
                (this_rig, this_rig.cluster.start_scheduler())]
            for cloud, daemon in daemons:
                cloud.cluster.wait_until(
                    lambda daemon=daemon: rig.READY in daemon.log(), 300,
                    'the scheduler to be ready', daemon)
            base_rig.start_echo()
            base_uuids = base_rig.instances(calls + WARMUP)
            this_uuids = this_rig.instances(calls + WARMUP)
            items = _turns(base_uuids, this_uuids, calls)
            warm = _turns(base_uuids[calls:], this_uuids[calls:], WARMUP)
            context = multiprocessing.get_context('spawn')
            queue = context.Queue()
            caller = context.Process(target=_caller, args=(
                base_rig.cluster.conf_path, this_rig.cluster.transport_url,
                items, warm, queue))
            caller.start()
            try:
                timed = queue.get(timeout=3600)
            finally:
                caller.join(60)
                if caller.is_alive():
                    caller.kill()
            for cloud in (base_rig, this_rig):
                cloud.stop_schedulers()
                status, output = cloud.db_check()
                if status:
                    print('db check failed:\n%s' % output)
        p50 = {kind: rig.p50([seconds * 1000 for name, seconds in timed
                              if name == kind]) for kind in KINDS}
        print('latency: %d hosts, postgresql, %d calls of each kind in '
              'turns; base %s' % (hosts, calls, base))
        rig.table([
            ('base select_destinations p50 (ms) vs echo', p50['base'],
             p50['echo'], ''),
            ('this select_destinations p50 (ms) vs echo', p50['this'],
             p50['echo'], ''),
            ('this p50 (ms) vs base p50', p50['this'], p50['base'], ''),
        ])
    finally:
        for workdir in workdirs:
            shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--base', required=True,
                        help='a directory holding the other checkout')
    parser.add_argument('--hosts', type=int, default=10000)
    parser.add_argument('--calls', type=int, default=300)
    parser.add_argument('--set', dest='options', action='append',
                        type=rig.parse_option, default=[],
                        metavar='SECTION.OPTION=VALUE',
                        help='an option for both daemons (repeatable)')
    parser.add_argument('--set-this', dest='this_options', action='append',
                        type=rig.parse_option, default=[],
                        metavar='SECTION.OPTION=VALUE',
                        help="an option for this checkout's daemon only")
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.base, 'scheduler',
                                       '__init__.py')):
        parser.error('--base %s holds no scheduler package' % args.base)
    run(args.base, args.hosts, args.calls, args.options, args.this_options)


if __name__ == '__main__':
    started = time.monotonic()
    main()
    print('(%.0f s)' % (time.monotonic() - started))
