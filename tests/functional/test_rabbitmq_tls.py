"""Daemons on a TLS-only broker, with passwords that must stay secret.

One node of ``tests.fixtures.rabbitmq`` listens with TLS only (its plain
AMQP listener is off), so a daemon that sent anything in clear could not
start. Its user's password, and the database passwords, hold the
characters the old redaction missed; none may appear in any log or in
``gantt-manage``'s output.
"""

import urllib.parse

import pytest

from tests.fixtures import rabbitmq
from tests.functional import boot_scenario
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

# oslo.messaging's rabbit driver cannot log in with a '/' in a password,
# however it is encoded; the other characters are fine.
SECRET = 'Tls,s3cr#t?x@y'
DB_SECRET = 'Db,s3cr/t#x?y'


@pytest.fixture(scope='module')
def tls_node(tmp_path_factory):
    with rabbitmq.node(tmp_path_factory.mktemp('rabbit-tls'),
                       tls=True) as node:
        node.ctl('add_user', 'gantt', SECRET)
        node.ctl('set_permissions', '-p', '/', 'gantt', '.*', '.*', '.*')
        yield node


def with_password(db_url, password, query=False):
    """``db_url`` (trust-authenticated PostgreSQL) with a password that
    the server ignores: percent-encoded, or as ``?password=``."""
    if query:
        return '%s?password=%s' % (db_url, urllib.parse.quote_plus(password))
    return db_url.replace('postgres@', 'postgres:%s@' % urllib.parse.quote(
        password, ''))


def test_boot_over_tls_keeps_secrets(tls_node, tmp_path):
    url = 'rabbit://gantt:%s@127.0.0.1:%d/' % (
        urllib.parse.quote(SECRET, ''), tls_node.port)
    with cluster_mod.Cluster(tmp_path, 'postgresql', transport_url=url,
                             extra_conf=tls_node.oslo_messaging_conf()) as c:
        c.start_conductor_with_conf(extra_conf='[database]\nconnection = %s\n'
                                    % with_password(c.db_url, DB_SECRET,
                                                    query=True))
        c.start_compute('tls1', vcpus=4, memory_mb=4096, local_gb=40)
        c.start_scheduler(extra_conf='[database]\nconnection = %s\n'
                          % with_password(c.db_url, DB_SECRET))
        c.wait_for_computes(['tls1'])
        c.discover_hosts()
        uuids = boot_scenario.create(c, '--vcpus', '1', '--ram', '512',
                                     '--disk', '1', '--count', '2')
        rows = boot_scenario.servers(c, uuids)
        assert [row.vm_state for row in rows] == ['active', 'active'], rows
        assert {row.host for row in rows} == {'tls1'}
        listed = c.manage('server', 'list')
        # Without ssl = true the same URL is refused, in one clear line.
        plain = c.run_to_exit('gantt-scheduler', 'plain',
                              '[oslo_messaging_rabbit]\nssl = false\n',
                              timeout=60)
        logs = c.logs()
    assert plain.returncode == 1, plain
    assert plain.stderr.strip().splitlines()[-1].startswith(
        'gantt-scheduler: error: Cannot reach the message broker at '
        'rabbit://gantt:***@127.0.0.1:%d/: ' % tls_node.port), plain.stderr
    logs['plain'] = plain.stdout + plain.stderr
    for name, text in list(logs.items()) + [
            ('server list', listed.stdout + listed.stderr)]:
        assert 'rabbit://gantt:***@127.0.0.1:%d/' % tls_node.port in text \
            or name == 'server list', name
        for secret in (SECRET, DB_SECRET):
            for form in (secret, urllib.parse.quote(secret, ''),
                         urllib.parse.quote_plus(secret)):
                assert form not in text, (name, form)
