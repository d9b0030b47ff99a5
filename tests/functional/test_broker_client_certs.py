"""Daemons on a TLS broker that demands client certificates.

The node (``tests.fixtures.rabbitmq``, ``client_certs=True``) verifies
the peer and refuses a client without a certificate of its CA
(``ssl_options.verify = verify_peer``, ``fail_if_no_peer_cert = true``)
and offers the EXTERNAL mechanism, which logs a client in as its
certificate's common name. Each service has the least-privilege user of
:mod:`scheduler.broker_permissions`: the scheduler and the conductor log
in with their passwords over a certificate, the compute by its
certificate alone (``rabbit_login_method = EXTERNAL``, no password in its
URL). A scheduler without a certificate cannot connect.
"""

import pytest

from tests.fixtures import rabbitmq
from tests.functional import boot_scenario
from tests.functional import cluster as cluster_mod
from tests.functional import test_broker_permissions as permissions

pytestmark = pytest.mark.functional


def test_services_connect_with_client_certificates(tmp_path):
    with rabbitmq.node(tmp_path / 'rabbit', tls=True,
                       client_certs=True) as node:
        permissions.add_service_users(node)
        # The compute's user has no password at all: only EXTERNAL.
        node.ctl('clear_password', 'gantt-compute')
        (tmp_path / 'cluster').mkdir()
        with cluster_mod.Cluster(
                tmp_path / 'cluster', 'sqlite',
                transport_url=permissions.url_of(node, 'gantt-manage'),
                extra_conf=node.oslo_messaging_conf('gantt-manage')) as c:
            c.start_conductor_with_conf(extra_conf=permissions.service_conf(
                node, 'gantt-conductor') + node.oslo_messaging_conf(
                    'gantt-conductor'))
            c.start_compute('cmp1', vcpus=2, memory_mb=2048, local_gb=20,
                            extra_conf='[DEFAULT]\ntransport_url = rabbit://'
                            '127.0.0.1:%d/%s\n' % (node.port,
                                                   permissions.VHOST)
                            + node.oslo_messaging_conf('gantt-compute')
                            + 'rabbit_login_method = EXTERNAL\n')
            c.start_scheduler(extra_conf=permissions.service_conf(
                node, 'gantt-scheduler') + node.oslo_messaging_conf(
                    'gantt-scheduler'))
            c.wait_for_computes(['cmp1'])
            c.discover_hosts()
            uuids = boot_scenario.create(c, '--vcpus', '1', '--ram', '512',
                                         '--disk', '1')
            rows = boot_scenario.servers(c, uuids)
            users = node.ctl('list_connections', 'user', 'auth_mechanism',
                             'ssl', 'peer_cert_subject').stdout
            # The right password without a certificate is refused (the
            # cluster's file names gantt-manage's: emptied here).
            without_cert = c.run_to_exit(
                'gantt-scheduler', 'no-cert',
                permissions.service_conf(node, 'gantt-scheduler')
                + node.oslo_messaging_conf()
                + 'ssl_cert_file =\nssl_key_file =\n', timeout=60)
    assert [row.vm_state for row in rows] == ['active'], rows
    assert {row.host for row in rows} == {'cmp1'}
    lines = [line.split('\t') for line in users.splitlines()[1:]]
    assert ['gantt-compute', 'EXTERNAL', 'true', 'CN=gantt-compute'] in \
        lines, users
    assert ['gantt-scheduler', 'AMQPLAIN', 'true', 'CN=gantt-scheduler'] \
        in lines, users
    assert without_cert.returncode == 1, without_cert
    assert without_cert.stderr.strip().splitlines()[-1].startswith(
        'gantt-scheduler: error: Cannot reach the message broker at '
        'rabbit://gantt-scheduler:***@127.0.0.1:%d/gantt: ' % node.port), \
        without_cert.stderr
