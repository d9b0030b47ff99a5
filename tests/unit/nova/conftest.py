"""Fixtures of the Nova mirror's tests: the real Placement in process, a
Nova deployment in SQLite files (:mod:`tests.unit.nova.nova_cloud`), and
the mirror configured over them as a Nova mode scheduler configures it.

``placement``
    The in-process Placement, emptied (one per process: see
    ``placement_harness``).
``cloud``
    A :class:`tests.unit.nova.nova_cloud.NovaCloud`.
``switch``
    The mirror's PlacementClient: :class:`Switch`.
``synced``
    The :class:`scheduler.nova.mirror.Mirror` of ``cloud`` and
    ``switch``; ``[database]`` points at the mirror (a SQLite file).
"""

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
import pytest

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.nova import mirror
from scheduler.nova import placement_client
from tests.functional import placement_harness
from tests.unit.nova import nova_cloud

CONF = conf.CONF


@pytest.fixture(scope='module')
def running_placement():
    with placement_harness.running() as client:
        yield client


@pytest.fixture
def placement(running_placement):
    placement_harness.wipe()
    return running_placement


class Switch:
    """A PlacementClient that goes to the in-process Placement, or, when
    ``away``, to a port nothing listens on; it counts its GETs."""

    def __init__(self, adapter):
        self.present = placement_client.PlacementClient(adapter)
        self.absent = placement_client.PlacementClient(ks_adapter.Adapter(
            ks_session.Session(), endpoint_override='http://127.0.0.1:9'))
        self.away = False
        self.gets = 0

    def get(self, url, version, **kwargs):
        self.gets += 1
        client = self.absent if self.away else self.present
        return client.get(url, version, **kwargs)


@pytest.fixture
def cloud(tmp_path, placement):
    cloud = nova_cloud.NovaCloud(tmp_path, placement)
    yield cloud
    cloud.dispose()


@pytest.fixture
def switch(placement):
    return Switch(placement.adapter)


@pytest.fixture
def synced(config, cloud, switch, tmp_path):
    """The mirror configured as a Nova mode scheduler does (nova.conf's
    [database] and [api_database] are Nova's)."""
    config.config(connection=cloud.cell_url, group='database')
    config.config(connection=cloud.api_url, group='api_database')
    config.config(mirror_connection='sqlite:///%s' % (
        tmp_path / 'mirror.sqlite'), group='nova_backend')
    the_mirror = mirror.configure(CONF, client_factory=lambda: switch)
    yield the_mirror
    mirror.reset()
    db_api.dispose_engine()
