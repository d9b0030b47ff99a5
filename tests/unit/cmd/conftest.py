"""Fixtures of the gantt-manage tests: run it in-process, read its output."""

import collections
import logging as std_logging

from oslo_messaging import conffixture
import oslo_messaging as messaging
import pytest

from conductor import rpcapi as conductor_rpcapi
from scheduler.cmd import manage
from scheduler import conf
from scheduler import rpc

Result = collections.namedtuple('Result', 'code out err')
CONF = conf.CONF


@pytest.fixture(autouse=True)
def restore_logging():
    """main() sets up oslo.log on the root logger; undo it after the test
    so that no handler keeps writing to a closed capture stream."""
    root = std_logging.getLogger()
    level = root.level
    yield
    for handler in list(root.handlers):
        if type(handler) is std_logging.StreamHandler:
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
def conf_file(tmp_path):
    """The (empty) file given as ``--config-file``; tests may fill it."""
    path = tmp_path / 'gantt.conf'
    path.write_text('')
    return path


@pytest.fixture
def run(conf_file, capsys):
    """Run gantt-manage with ``--config-file``; return code, out, err."""
    def run_manage(*args):
        code = manage.main(['gantt-manage', '--config-file', str(conf_file)]
                           + list(args))
        out, err = capsys.readouterr()
        return Result(code, out, err)
    return run_manage


@pytest.fixture
def fake_transport(config):
    """This process's RPC on oslo.messaging's ``fake://`` transport, which
    gantt-manage then uses too."""
    messaging_conf = conffixture.ConfFixture(CONF)
    messaging_conf.setUp()
    messaging_conf.transport_url = 'fake://'
    rpc.init(CONF)
    try:
        yield
    finally:
        rpc.cleanup()
        messaging_conf.cleanUp()


@pytest.fixture
def serve_as_conductor(fake_transport):
    """A function that serves an endpoint on the conductor topic (a fake
    conductor, in this process) until the test ends; it returns it."""
    servers = []

    def serve(endpoint):
        server = rpc.get_server(
            messaging.Target(topic=conductor_rpcapi.RPC_TOPIC,
                             server='fake-conductor'), [endpoint])
        server.start()
        servers.append(server)
        return endpoint

    yield serve
    for server in servers:
        server.stop()
        server.wait()
