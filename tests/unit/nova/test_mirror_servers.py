"""The mirror with Nova's databases and the mirror itself on PostgreSQL
and MariaDB (scratch databases, dropped after): the read-only sessions
of each server, the mirror's writes, and the host cache's reads of the
server (its psycopg2 paths included)."""

import pytest
import sqlalchemy as sa

from scheduler import conf
from scheduler.db import api as db_api
from scheduler import host_cache
from scheduler.nova import mirror
from scheduler.nova import nova_reader
from tests.fixtures import databases
from tests.unit.nova import nova_cloud

CONF = conf.CONF

pytestmark = pytest.mark.filterwarnings(
    "ignore:'cgi' is deprecated:DeprecationWarning")


@pytest.fixture(params=('postgresql', 'mariadb'))
def server_urls(request):
    """The URLs of three scratch databases: Nova's API and cell
    databases, and the mirror."""
    urls = []
    try:
        for _database in range(3):
            try:
                urls.append(databases.create_database(request.param))
            except databases.ServerDown as error:
                pytest.fail(str(error), pytrace=False)
        yield urls
    finally:
        db_api.dispose_engine()
        for url in urls:
            databases.drop_database(url)


@pytest.fixture
def server_cloud(server_urls, tmp_path, placement):
    cloud = nova_cloud.NovaCloud(tmp_path, placement, api_url=server_urls[0],
                                 cell_url=server_urls[1])
    yield cloud
    cloud.dispose()


@pytest.fixture
def server_synced(config, server_cloud, server_urls, switch):
    config.config(connection=server_cloud.cell_url, group='database')
    config.config(connection=server_cloud.api_url, group='api_database')
    config.config(mirror_connection=server_urls[2], group='nova_backend')
    the_mirror = mirror.configure(CONF, client_factory=lambda: switch)
    yield the_mirror
    mirror.reset()
    db_api.dispose_engine()


def test_a_mirror_on_a_database_server(server_synced, server_cloud):
    cloud = server_cloud
    one = cloud.add_compute('host1', vcpus=8)
    cloud.add_compute('host2', vcpus=4)
    cloud.add_aggregate('zone', ['host1'], availability_zone='az1')
    server = cloud.add_instance('host1')
    server_synced.sync()
    manager = host_cache.HostManager(auto_refresh=False)
    hosts = nova_cloud.by_host(manager.refresh(full=True))
    assert set(hosts) == {'host1', 'host2'}
    assert hosts['host1'].availability_zones == {'az1'}
    assert set(hosts['host1'].instances) == {server}

    cloud.allocate({one: {'VCPU': 3}})
    cloud.update_service('host2', disabled=True)
    cloud.delete_instance(server)
    server_synced.sync_into(manager)
    hosts = nova_cloud.by_host(manager.snapshot())
    assert hosts['host1'].vcpus_used == 3
    assert hosts['host2'].service.disabled
    assert hosts['host1'].instances == {}


def test_nova_s_server_databases_are_read_only(server_cloud):
    server_cloud.add_compute('host1')
    engine = nova_reader.read_only_engine(server_cloud.cell_url)
    try:
        with engine.connect() as connection:
            assert connection.execute(sa.text(
                'SELECT count(*) FROM services')).scalar() == 1
        with pytest.raises(sa.exc.DBAPIError,
                           match='(?i)read.only'):
            with engine.begin() as connection:
                connection.execute(sa.text(
                    'UPDATE services SET disabled = true'))
    finally:
        engine.dispose()
    with server_cloud.cell.connect() as connection:
        assert not connection.execute(sa.text(
            'SELECT disabled FROM services')).scalar()
