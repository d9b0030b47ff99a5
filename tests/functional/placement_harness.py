"""The real Placement, in this process, on an in-memory SQLite database.

``placement.direct.PlacementDirect`` serves Placement's WSGI application
through wsgi-intercept: requests go to it without a socket. Its options
live on a ConfigOpts of their own, never on Gantt's global ``CONF``::

    with placement_harness.running() as placement:
        placement.put('/traits/CUSTOM_GOLD')
        placement.get('/allocation_candidates?resources=VCPU:1')

Placement's database engine is process-wide (its enginefacade is
configured once), so a process runs one Placement; ``wipe()`` empties its
providers, allocations and aggregates between clouds.
"""

import contextlib

MICROVERSION = '1.39'

# Emptied by wipe(), children before parents.
_TABLES = ('allocations', 'consumers', 'inventories',
           'resource_provider_traits', 'resource_provider_aggregates',
           'placement_aggregates', 'resource_providers')


class Client:
    """Placement's REST API at one microversion; every call must succeed."""

    def __init__(self, adapter):
        self._adapter = adapter

    @property
    def adapter(self):
        """The keystoneauth1 adapter, for a client of Gantt's own
        (:class:`scheduler.nova.placement_client.PlacementClient`)."""
        return self._adapter

    def _call(self, method, url, **kwargs):
        headers = {'OpenStack-API-Version': 'placement %s' % MICROVERSION}
        response = self._adapter.request(url, method, headers=headers,
                                         **kwargs)
        if response.status_code >= 300:
            raise AssertionError('Placement %s %s: %s %s' % (
                method, url, response.status_code, response.text))
        return response.json() if response.content else None

    def get(self, url):
        return self._call('GET', url)

    def put(self, url, body=None):
        return self._call('PUT', url, json=body)

    def post(self, url, body):
        return self._call('POST', url, json=body)

    def delete(self, url):
        return self._call('DELETE', url)


def _config():
    from oslo_config import cfg
    from placement import conf as placement_conf

    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf.set_override('connection', 'sqlite://', group='placement_database')
    conf.set_override('sync_on_startup', True, group='placement_database')
    conf([], project='placement', default_config_files=[])
    return conf


@contextlib.contextmanager
def running():
    """A :class:`Client` of a Placement served in process."""
    from placement import db_api
    from placement import direct

    conf = _config()
    # Once a process: later calls log that the engine is already set up
    # and keep it (the same in-memory database).
    db_api.configure(conf)
    with direct.PlacementDirect(conf) as adapter:
        client = Client(adapter)
        # The application (and its database schema) is built on the first
        # request.
        client.get('/')
        yield client


def wipe():
    """Remove every provider, allocation and aggregate (traits and
    resource classes stay)."""
    import sqlalchemy
    from placement import db_api

    with db_api.get_placement_engine().begin() as connection:
        for table in _TABLES:
            connection.execute(sqlalchemy.text('DELETE FROM %s' % table))

