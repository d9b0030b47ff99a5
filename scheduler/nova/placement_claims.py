"""Claims in Placement, as Nova 34's scheduler makes and undoes them.

In Nova mode the truth of usage is Placement's: a claim is ``PUT
/allocations/{consumer}``, which Placement writes whole or not at all and
refuses when a provider lacks the room. What this module adds to that
one request is what Nova's scheduler adds (``SchedulerReportClient.
claim_resources`` and ``delete_allocation_for_instance``):

* the consumer's current allocations are read first (``GET
  /allocations/{consumer}`` at 1.28). A consumer that already holds some
  (a non-forced evacuation keeps its source host's allocation on the
  instance) gets the source's and the destination's together, under the
  consumer generation that read returned; providers the consumer already
  uses (shared storage) keep their amounts;
* the ``PUT`` is sent at the allocation request's microversion (Nova 34
  asks ``GET /allocation_candidates`` at 1.36 and claims at the same
  version), with ``project_id``, ``user_id`` and, from 1.28,
  ``consumer_generation`` (None: a new consumer). Nova's scheduler sends
  no ``consumer_type`` (1.38): Placement records none;
* a 409 is told apart by its error code and detail, as Nova does:

  ====================================  =================================
  ``placement.concurrent_update`` and    the consumer changed since it was
  "consumer generation conflict"         read: :class:`ConsumerConflict`
                                         raised, not retried (Nova's
                                         AllocationUpdateFailed)
  ``placement.concurrent_update``        a provider's generation moved
  otherwise                              under Placement's own retries:
                                         read and put again, up to 4
                                         attempts, then False
  any other (capacity exceeded, ...)     False: the caller tries its next
                                         host
  ====================================  =================================

  any other refusal (400: an unknown provider, 5xx) is False too;
* a Placement that cannot be reached raises
  :class:`placement_client.PlacementUnreachable` (Nova's scheduler logs
  and goes on to the next host, which cannot be reached either).

A refused or failed claim leaves the consumer's allocations as they were:
the claim is that one ``PUT``. Usage::

    won = placement_claims.claim(client, instance_uuid, alloc_req,
                                 project_id, user_id)
    ...
    placement_claims.release(client, [uuid1, uuid2])   # NoValidHost

``release`` deletes as Nova's scheduler cleans up a request it could not
place entirely (``DELETE /allocations/{consumer}``, no generation);
``release(..., force=False)`` and :func:`give_back` read the consumer's
generation and write under it.
"""

import copy
import random
import time

from oslo_log import log as logging

from scheduler.nova import placement_client

LOG = logging.getLogger(__name__)

# Nova 34 reads allocation candidates at 1.36 (same_subtree) and claims
# at the version it read them at.
CLAIM_VERSION = '1.36'
# Consumer generations: GET /allocations/{consumer} returns it, PUT
# takes it.
CONSUMER_GENERATION_VERSION = '1.28'
# Nova sends its forced DELETE without a microversion: Placement's oldest.
DELETE_VERSION = '1.0'
PROVIDER_VERSION = '1.14'
# Nova's report client tries an operation this many times when a
# provider generation conflict asks it to.
ATTEMPTS = 4

CONCURRENT_UPDATE = 'placement.concurrent_update'
CONSUMER_CONFLICT_DETAIL = 'consumer generation conflict'


class ConsumerConflict(Exception):
    """Another writer changed the consumer's allocations between our read
    and our write (Nova's AllocationUpdateFailed)."""

    def __init__(self, consumer_uuid, detail):
        super().__init__(
            'Allocations of consumer %s changed while being claimed or '
            'released (%s); nothing was written' % (consumer_uuid, detail))
        self.consumer_uuid = consumer_uuid
        self.detail = detail


class ReleaseFailed(Exception):
    """Placement refused to remove allocations (Nova's
    AllocationDeleteFailed)."""


class _ProviderConflict(Exception):
    """A provider generation conflict: read and write again."""


def nova_backoff(attempt):
    """Nova's pause before attempt ``attempt`` (0-based): up to twice
    the attempt's number of seconds, none before the first."""
    time.sleep(random.uniform(0, attempt * 2))


def _retried(operation, consumer_uuid, backoff):
    """Run ``operation()`` up to ATTEMPTS times while it raises
    _ProviderConflict; its value, or False when out of attempts."""
    for attempt in range(ATTEMPTS):
        if attempt:
            backoff(attempt)
        try:
            return operation()
        except _ProviderConflict as conflict:
            LOG.debug('Consumer %(uuid)s: %(why)s; trying again',
                      {'uuid': consumer_uuid, 'why': conflict})
    LOG.error('Allocations of consumer %s not written: provider generation '
              'conflicts on %d attempts', consumer_uuid, ATTEMPTS)
    return False


def error_of(response):
    """``(code, detail)`` of Placement's first error in ``response``
    (empty strings when the body is not Placement's error document)."""
    try:
        error = response.json()['errors'][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return '', response.text or ''
    return error.get('code') or '', error.get('detail') or ''


def is_consumer_conflict(response):
    """Whether a 409 is a consumer generation conflict (rather than a
    provider's, or a refusal): Placement gives both the code
    ``placement.concurrent_update`` and tells them apart in the detail
    only, so Nova (and this) read it."""
    code, detail = error_of(response)
    return code == CONCURRENT_UPDATE and CONSUMER_CONFLICT_DETAIL in detail


def _version_tuple(version):
    major, minor = version.split('.')
    return int(major), int(minor)


def merged_request(current, allocation_request):
    """The allocation a move claims: the consumer's ``current``
    allocations (``{provider: {'resources': ...}}``) plus the providers
    of ``allocation_request`` it does not already use."""
    merged = {uuid: {'resources': dict(held['resources'])}
              for uuid, held in current.items()}
    for uuid, wanted in allocation_request['allocations'].items():
        if uuid not in merged:
            merged[uuid] = copy.deepcopy(wanted)
    return {'allocations': merged}


def claim(client, consumer_uuid, allocation_request, project_id, user_id,
          allocation_request_version=CLAIM_VERSION,
          consumer_generation=None, global_request_id=None, report=None,
          backoff=nova_backoff):
    """Claim ``allocation_request`` (Placement's allocation request:
    ``{'allocations': {provider: {'resources': {...}}}, 'mappings': ...}``)
    for ``consumer_uuid``: True if Placement wrote it, False if it
    refused (the caller tries its next host).

    ``consumer_generation``: what a caller that read the consumer itself
    expects (Nova's forced evacuation); otherwise the read here decides.
    ``report`` (a dict) is given ``merged_with``: the allocations the
    consumer held before a won claim was added to them (``{}`` for a new
    consumer).

    :raises ConsumerConflict: the consumer changed between read and write.
    :raises PlacementUnreachable: Placement could not be reached.
    :raises ValueError: no project or user to record the claim under.
    """
    if not project_id or not user_id:
        raise ValueError(
            'A claim in Placement for consumer %s needs a project_id and a '
            'user_id (got %r, %r)' % (consumer_uuid, project_id, user_id))
    url = '/allocations/%s' % consumer_uuid

    def attempt():
        payload = copy.deepcopy(allocation_request)
        expected = payload.pop('consumer_generation', consumer_generation)
        held = {}
        response = client.get(url, CONSUMER_GENERATION_VERSION,
                              global_request_id=global_request_id)
        if response.status_code == 200:
            body = response.json()
            held = body.get('allocations') or {}
            if held:
                if 'consumer_generation' not in allocation_request:
                    expected = body.get('consumer_generation')
                LOG.debug('Consumer %(uuid)s holds %(held)s: claiming those '
                          'and the new ones together (a move)',
                          {'uuid': consumer_uuid, 'held': held})
                payload = merged_request(held, payload)
        payload['project_id'] = project_id
        payload['user_id'] = user_id
        if (_version_tuple(allocation_request_version)
                >= _version_tuple(CONSUMER_GENERATION_VERSION)):
            payload['consumer_generation'] = expected
        response = client.put(url, payload, allocation_request_version,
                              global_request_id=global_request_id)
        if response.status_code == 204:
            if report is not None:
                report['merged_with'] = {
                    uuid: {'resources': dict(alloc['resources'])}
                    for uuid, alloc in held.items()}
            return True
        code, detail = error_of(response)
        LOG.warning('Placement refused allocations for consumer %(uuid)s: '
                    '%(status)s %(code)s %(detail)s',
                    {'uuid': consumer_uuid, 'status': response.status_code,
                     'code': code, 'detail': detail})
        if response.status_code == 409 and code == CONCURRENT_UPDATE:
            if CONSUMER_CONFLICT_DETAIL in detail:
                raise ConsumerConflict(consumer_uuid, detail)
            raise _ProviderConflict(detail)
        return False

    return _retried(attempt, consumer_uuid, backoff)


def release(client, consumer_uuids, force=True, global_request_id=None):
    """Remove all allocations of each of ``consumer_uuids`` (the claims of
    a request that could not be placed entirely); the consumers released
    (a consumer that holds nothing is not among them).

    ``force`` (what Nova's scheduler does): ``DELETE`` regardless of the
    consumer's generation. ``force=False``: read the generation and
    write empty allocations under it (a consumer changed meanwhile raises
    :class:`ConsumerConflict`).

    Every consumer is tried. One Placement cannot be reached for is
    logged and left (Nova's scheduler does the same); Placement refusing
    raises :class:`ReleaseFailed` naming those refused, after the rest.
    """
    released, refused = [], []
    for consumer_uuid in consumer_uuids:
        try:
            if force:
                done = _delete(client, consumer_uuid, global_request_id)
            else:
                done = _put_empty(client, consumer_uuid, global_request_id)
        except placement_client.PlacementUnreachable as error:
            LOG.error('Allocations of consumer %(uuid)s not released: '
                      '%(error)s', {'uuid': consumer_uuid, 'error': error})
            continue
        except ReleaseFailed as error:
            refused.append(str(error))
            continue
        if done:
            released.append(consumer_uuid)
    if refused:
        raise ReleaseFailed('; '.join(refused))
    return released


def _delete(client, consumer_uuid, global_request_id):
    response = client.delete('/allocations/%s' % consumer_uuid,
                             DELETE_VERSION,
                             global_request_id=global_request_id)
    if response.status_code == 204:
        LOG.info('Deleted allocations of consumer %s', consumer_uuid)
        return True
    if response.status_code == 404:
        return False
    raise ReleaseFailed('consumer %s: %s %s' % (
        consumer_uuid, response.status_code, error_of(response)[1]))


def _put_empty(client, consumer_uuid, global_request_id):
    url = '/allocations/%s' % consumer_uuid
    response = client.get(url, CONSUMER_GENERATION_VERSION,
                          global_request_id=global_request_id)
    if response.status_code != 200:
        raise ReleaseFailed('consumer %s: reading it gave %s' % (
            consumer_uuid, response.status_code))
    body = response.json()
    if not body.get('allocations'):
        return False
    body['allocations'] = {}
    response = client.put(url, body, CONSUMER_GENERATION_VERSION,
                          global_request_id=global_request_id)
    if response.status_code == 204:
        LOG.info('Deleted allocations of consumer %s', consumer_uuid)
        return True
    if is_consumer_conflict(response):
        raise ConsumerConflict(consumer_uuid, error_of(response)[1])
    raise ReleaseFailed('consumer %s: %s %s' % (
        consumer_uuid, response.status_code, error_of(response)[1]))


def give_back(client, consumer_uuid, provider_uuids, global_request_id=None,
              backoff=nova_backoff):
    """Remove the allocations of ``consumer_uuid`` on ``provider_uuids``
    only (a move's claim on its destination, undone: the source's stay),
    under the consumer's generation; a conflict of either kind reads and
    writes again, up to ATTEMPTS times (Nova's
    ``remove_resources_from_instance_allocation``). True when written
    (or nothing was held there).

    :raises ReleaseFailed: refused, or conflicts on every attempt.
    """
    url = '/allocations/%s' % consumer_uuid
    dropped = set(provider_uuids)

    def attempt():
        response = client.get(url, CONSUMER_GENERATION_VERSION,
                              global_request_id=global_request_id)
        if response.status_code != 200:
            raise ReleaseFailed('consumer %s: reading it gave %s' % (
                consumer_uuid, response.status_code))
        body = response.json()
        held = body.get('allocations') or {}
        if not dropped & set(held):
            return True
        body['allocations'] = {
            uuid: {'resources': alloc['resources']}
            for uuid, alloc in held.items() if uuid not in dropped}
        response = client.put(url, body, CONSUMER_GENERATION_VERSION,
                              global_request_id=global_request_id)
        if response.status_code == 204:
            return True
        code, detail = error_of(response)
        if response.status_code == 409 and code == CONCURRENT_UPDATE:
            raise _ProviderConflict(detail)
        raise ReleaseFailed('consumer %s: %s %s' % (
            consumer_uuid, response.status_code, detail))

    if not _retried(attempt, consumer_uuid, backoff):
        raise ReleaseFailed('consumer %s: its allocations kept changing'
                            % consumer_uuid)
    return True


def provider_generation(client, provider_uuid, global_request_id=None):
    """The provider's generation now, or None if Placement did not say."""
    response = client.get('/resource_providers/%s' % provider_uuid,
                          PROVIDER_VERSION,
                          global_request_id=global_request_id)
    if response.status_code != 200:
        return None
    return response.json().get('generation')
