"""Placement's REST API, as Nova mode talks to it.

A :class:`PlacementClient` wraps a keystoneauth1 adapter: the one
``[placement]`` describes (:meth:`PlacementClient.from_conf`, the options a
nova.conf already has), or any adapter given, such as the in-process
Placement of the tests. Every request names its microversion::

    client = PlacementClient.from_conf(CONF)
    response = client.get('/resource_providers', version='1.14')
    providers = response.json()['resource_providers']

Failures to reach Placement at all (refused, timed out, no endpoint in
the catalog) are raised as :class:`PlacementUnreachable`, whatever
keystoneauth1 called them; an answer Placement gave, of any status, is
returned as it is for the caller to judge.
"""

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from scheduler.conf import placement as placement_conf

LOG = logging.getLogger(__name__)


class PlacementUnreachable(Exception):
    """Placement did not answer: refused, timed out, or not found in the
    service catalog."""


class PlacementClient:
    """Placement's REST API through one keystoneauth1 adapter."""

    def __init__(self, adapter):
        self._adapter = adapter

    @classmethod
    def from_conf(cls, conf):
        """The client ``conf``'s ``[placement]`` group describes."""
        group = placement_conf.placement_group.name
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        session = ks_loading.load_session_from_conf_options(
            conf, group, auth=auth)
        adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth)
        return cls(adapter)

    def request(self, method, url, version, json=None,
                global_request_id=None):
        """One request at microversion ``version``; the response, whatever
        its status."""
        headers = {'OpenStack-API-Version': 'placement %s' % version}
        if global_request_id:
            headers['X-OpenStack-Request-ID'] = global_request_id
        kwargs = {'headers': headers, 'raise_exc': False}
        if json is not None:
            kwargs['json'] = json
        try:
            return self._adapter.request(url, method, **kwargs)
        except (ks_exc.ConnectFailure, ks_exc.ConnectTimeout,
                ks_exc.EndpointNotFound, ks_exc.DiscoveryFailure,
                ks_exc.RequestTimeout, ks_exc.UnknownConnectionError) as err:
            raise PlacementUnreachable(
                'Placement is unreachable (%s %s): %s' % (method, url, err))

    def get(self, url, version, **kwargs):
        return self.request('GET', url, version, **kwargs)

    def put(self, url, json, version, **kwargs):
        return self.request('PUT', url, version, json=json, **kwargs)

    def post(self, url, json, version, **kwargs):
        return self.request('POST', url, version, json=json, **kwargs)

    def delete(self, url, version, **kwargs):
        return self.request('DELETE', url, version, **kwargs)
