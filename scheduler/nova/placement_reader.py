"""Placement's resource providers, read incrementally.

A provider's generation moves with every change of it: inventories,
traits, aggregates, and every allocation against it. :class:`ProviderReader`
lists the providers with their generations (one request) and reads again
only those whose generation moved since it last read them (four
requests each: inventories, usages, traits, aggregates); a sync where
nothing changed costs one request::

    reader = ProviderReader(placement_client.PlacementClient.from_conf(CONF))
    providers = reader.read()
    providers[uuid].inventories['VCPU']['total']

A provider is recorded at the generation the list gave, taken before its
details are read: a change in between is read once more at the next
sync, never missed. A provider deleted in between is left out. When
Placement does not answer, or answers an error, :class:`PlacementError`
is raised and the reader keeps what it held before the call.
"""

import collections

from oslo_log import log as logging

from scheduler.nova import placement_client

LOG = logging.getLogger(__name__)

# parent_provider_uuid and root_provider_uuid in the list (1.14); the
# aggregates' answer has the generation (1.19).
LIST_VERSION = '1.14'
DETAIL_VERSION = '1.19'


class PlacementError(Exception):
    """Placement could not be read."""


Provider = collections.namedtuple(
    'Provider', 'uuid name generation parent root inventories usages '
                'traits aggregates')


class ProviderReader:
    """Placement's providers through ``client`` (a PlacementClient)."""

    def __init__(self, client):
        self._client = client
        # {uuid: Provider} as last read.
        self._providers = {}

    def read(self):
        """``{uuid: Provider}`` of every provider now."""
        listed = self._get('/resource_providers', LIST_VERSION)
        providers = {}
        reread = 0
        for entry in listed['resource_providers']:
            uuid = entry['uuid']
            known = self._providers.get(uuid)
            if known is not None and known.generation == entry['generation']:
                providers[uuid] = known
                continue
            provider = self._read_one(entry)
            reread += 1
            if provider is not None:
                providers[uuid] = provider
        self._providers = providers
        LOG.debug('Placement: %d provider(s), %d read again',
                  len(providers), reread)
        return providers

    def _read_one(self, entry):
        """The Provider of a listed ``entry``; None if it is gone."""
        uuid = entry['uuid']
        base = '/resource_providers/%s' % uuid
        parts = {}
        for part in ('inventories', 'usages', 'traits', 'aggregates'):
            body = self._get('%s/%s' % (base, part), DETAIL_VERSION,
                             missing_ok=True)
            if body is None:
                LOG.debug('Provider %s went away while read', uuid)
                return None
            parts[part] = body[part]
        return Provider(
            uuid, entry.get('name'), entry['generation'],
            entry.get('parent_provider_uuid'),
            entry.get('root_provider_uuid') or uuid,
            parts['inventories'], parts['usages'],
            frozenset(parts['traits']), frozenset(parts['aggregates']))

    def _get(self, url, version, missing_ok=False):
        try:
            response = self._client.get(url, version=version)
        except placement_client.PlacementUnreachable as error:
            raise PlacementError(str(error)) from error
        if response.status_code == 404 and missing_ok:
            return None
        if response.status_code != 200:
            raise PlacementError('Placement answered GET %s with %s: %s' % (
                url, response.status_code, response.text[:200]))
        try:
            return response.json()
        except ValueError as error:
            raise PlacementError('Placement answered GET %s with no JSON: '
                                 '%s' % (url, error)) from error
