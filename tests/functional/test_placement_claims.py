"""Claims in the real Placement (in process), as Nova's scheduler makes
them: amounts and generations, a race for the last room, a consumer
changed under a claim, a provider generation conflict, a move's claim
on top of its source's, releases, and a Placement that is away."""

import threading
import uuid

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
import pytest

from scheduler.nova import allocations
from scheduler.nova import placement_claims
from scheduler.nova import placement_client
from scheduler import placement_types
from tests.functional import placement_harness

pytestmark = [
    pytest.mark.functional,
    pytest.mark.filterwarnings(
        "ignore:'cgi' is deprecated:DeprecationWarning"),
]

PROJECT = 'a-project'
USER = 'a-user'


def no_pause(_attempt):
    pass


@pytest.fixture(scope='module')
def running_placement():
    with placement_harness.running() as client:
        yield client


@pytest.fixture
def placement(running_placement):
    placement_harness.wipe()
    return running_placement


@pytest.fixture
def client(placement):
    return placement_client.PlacementClient(placement.adapter)


def provider(placement, vcpus=8, memory_mb=8192, disk_gb=100, name=None):
    """A root provider with inventory; its uuid."""
    rp_uuid = str(uuid.uuid4())
    placement.post('/resource_providers',
                   {'uuid': rp_uuid, 'name': name or rp_uuid})
    placement.put('/resource_providers/%s/inventories' % rp_uuid, {
        'resource_provider_generation': 0,
        'inventories': {
            'VCPU': {'total': vcpus}, 'MEMORY_MB': {'total': memory_mb},
            'DISK_GB': {'total': disk_gb}}})
    return rp_uuid


def request(rp_uuid, vcpus=1, memory_mb=512, disk_gb=10):
    return allocations.allocation_request(
        rp_uuid, placement_types.Resources(vcpus, memory_mb, disk_gb))


def held(placement, consumer_uuid):
    body = placement.get('/allocations/%s' % consumer_uuid)
    return ({rp: alloc['resources']
             for rp, alloc in body['allocations'].items()},
            body.get('consumer_generation'))


def usage(placement, rp_uuid):
    return placement.get('/resource_providers/%s/usages' % rp_uuid)['usages']


def test_claim_lands_with_amounts_and_generation(placement, client):
    rp = provider(placement)
    consumer = str(uuid.uuid4())
    generation = placement.get('/resource_providers/%s' % rp)['generation']

    assert placement_claims.claim(client, consumer, request(rp, 2, 1024, 20),
                                  PROJECT, USER) is True

    assert held(placement, consumer) == (
        {rp: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 20}}, 1)
    assert usage(placement, rp) == {'VCPU': 2, 'MEMORY_MB': 1024,
                                    'DISK_GB': 20}
    assert placement_claims.provider_generation(client, rp) == generation + 1
    body = placement.get('/allocations/%s' % consumer)
    assert (body['project_id'], body['user_id']) == (PROJECT, USER)
    # Nova 34's scheduler names no consumer type (1.38): Placement
    # records it as unknown.
    assert body['consumer_type'] == 'unknown'


def test_capacity_refusal_is_false_and_writes_nothing(placement, client):
    rp = provider(placement, vcpus=2)
    consumer = str(uuid.uuid4())

    assert placement_claims.claim(client, consumer, request(rp, vcpus=3),
                                  PROJECT, USER) is False

    assert held(placement, consumer)[0] == {}
    assert usage(placement, rp)['VCPU'] == 0


def test_unknown_provider_is_false(placement, client):
    assert placement_claims.claim(client, str(uuid.uuid4()),
                                  request(str(uuid.uuid4())),
                                  PROJECT, USER) is False


def test_claim_without_owner_is_refused_clearly(client):
    with pytest.raises(ValueError, match='needs a project_id and a user_id'):
        placement_claims.claim(client, str(uuid.uuid4()),
                               request(str(uuid.uuid4())), None, USER)


class _OneAtATime:
    """An adapter that serves one request at a time (the in-process
    Placement shares one SQLite connection between threads), holding
    each claimer's write until both have read: the claimers decide on the
    same view of the provider, and Placement decides between them."""

    def __init__(self, adapter, claimers):
        self._adapter = adapter
        self._lock = threading.Lock()
        self._both_read = threading.Barrier(claimers)

    def request(self, url, method, **kwargs):
        if method == 'PUT':
            self._both_read.wait(timeout=30)
        with self._lock:
            return self._adapter.request(url, method, **kwargs)


def test_racing_claimers_one_wins_the_last_room(placement, client):
    rp = provider(placement, vcpus=4)
    # Three of four CPUs taken: room for one more.
    assert placement_claims.claim(client, str(uuid.uuid4()),
                                  request(rp, vcpus=3), PROJECT, USER)
    consumers = [str(uuid.uuid4()) for _ in range(2)]
    racing = placement_client.PlacementClient(
        _OneAtATime(placement.adapter, len(consumers)))
    results = {}

    def race(consumer):
        results[consumer] = placement_claims.claim(
            racing, consumer, request(rp, vcpus=1), PROJECT, USER,
            backoff=no_pause)

    threads = [threading.Thread(target=race, args=(c,)) for c in consumers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(results.values()) == [False, True]
    assert usage(placement, rp)['VCPU'] == 4
    loser = [c for c in consumers if not results[c]][0]
    assert held(placement, loser)[0] == {}


class _Interleaved:
    """An adapter that lets ``between`` run once, between the claim's
    read of the consumer and its write (another writer)."""

    def __init__(self, adapter, between):
        self._adapter = adapter
        self._between = between

    def request(self, url, method, **kwargs):
        if method == 'PUT' and self._between is not None:
            between, self._between = self._between, None
            between()
        return self._adapter.request(url, method, **kwargs)


def test_consumer_changed_between_read_and_write(placement, client):
    """Nova raises AllocationUpdateFailed rather than retry: what the
    other writer wrote stays, nothing of the claim is written."""
    source, dest = provider(placement), provider(placement)
    consumer = str(uuid.uuid4())
    assert placement_claims.claim(client, consumer, request(source),
                                  PROJECT, USER)

    def other_writer():
        body = placement.get('/allocations/%s' % consumer)
        placement.put('/allocations/%s' % consumer, {
            'allocations': {source: {'resources': {'VCPU': 2}}},
            'consumer_generation': body['consumer_generation'],
            'project_id': PROJECT, 'user_id': USER,
            'consumer_type': 'INSTANCE'})

    racing = placement_client.PlacementClient(
        _Interleaved(placement.adapter, other_writer))
    with pytest.raises(placement_claims.ConsumerConflict,
                       match='changed while being claimed'):
        placement_claims.claim(racing, consumer, request(dest),
                               PROJECT, USER, backoff=no_pause)

    assert held(placement, consumer) == ({source: {'VCPU': 2}}, 2)
    assert usage(placement, dest)['VCPU'] == 0


def test_new_consumer_created_meanwhile_is_a_conflict(placement, client):
    rp = provider(placement)
    consumer = str(uuid.uuid4())

    def other_writer():
        placement.put('/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': {'VCPU': 1}}},
            'consumer_generation': None,
            'project_id': PROJECT, 'user_id': USER,
            'consumer_type': 'INSTANCE'})

    racing = placement_client.PlacementClient(
        _Interleaved(placement.adapter, other_writer))
    with pytest.raises(placement_claims.ConsumerConflict):
        placement_claims.claim(racing, consumer, request(rp, vcpus=2),
                               PROJECT, USER, backoff=no_pause)
    assert held(placement, consumer)[0] == {rp: {'VCPU': 1}}


def test_provider_generation_conflict_is_retried(placement, client,
                                                 monkeypatch):
    """Placement retries a provider generation conflict itself
    (``allocation_conflict_retry_count``, 10) before answering 409
    concurrent_update; the claim then reads and writes again."""
    from placement import exception as placement_exc
    from placement.objects import allocation as placement_alloc

    rp = provider(placement)
    consumer = str(uuid.uuid4())
    real = placement_alloc._set_allocations
    calls = []

    def conflicting(context, alloc_list):
        calls.append(1)
        if len(calls) <= 10:
            raise placement_exc.ResourceProviderConcurrentUpdateDetected()
        return real(context, alloc_list)

    monkeypatch.setattr(placement_alloc, '_set_allocations', conflicting)
    pauses = []
    assert placement_claims.claim(client, consumer, request(rp, vcpus=3),
                                  PROJECT, USER,
                                  backoff=pauses.append) is True
    assert pauses == [1]
    assert len(calls) == 11
    assert held(placement, consumer) == (
        {rp: {'VCPU': 3, 'MEMORY_MB': 512, 'DISK_GB': 10}}, 1)


def test_provider_conflicts_on_every_attempt_are_false(placement, client,
                                                       monkeypatch):
    from placement import exception as placement_exc
    from placement.objects import allocation as placement_alloc

    def conflicting(context, alloc_list):
        raise placement_exc.ResourceProviderConcurrentUpdateDetected()

    monkeypatch.setattr(placement_alloc, '_set_allocations', conflicting)
    rp = provider(placement)
    pauses = []
    assert placement_claims.claim(client, str(uuid.uuid4()), request(rp),
                                  PROJECT, USER,
                                  backoff=pauses.append) is False
    assert pauses == [1, 2, 3]


def test_move_claim_merges_with_the_source(placement, client):
    source, dest = provider(placement), provider(placement)
    shared = provider(placement)
    consumer = str(uuid.uuid4())
    placement.put('/allocations/%s' % consumer, {
        'allocations': {source: {'resources': {'VCPU': 2, 'MEMORY_MB': 1024}},
                        shared: {'resources': {'DISK_GB': 10}}},
        'consumer_generation': None,
        'project_id': PROJECT, 'user_id': USER,
        'consumer_type': 'INSTANCE'})
    ask = {'allocations': {dest: {'resources': {'VCPU': 2,
                                                'MEMORY_MB': 1024}},
                           shared: {'resources': {'DISK_GB': 10}}},
           'mappings': {'': [dest]}}
    report = {}

    assert placement_claims.claim(client, consumer, ask, PROJECT, USER,
                                  report=report) is True

    assert held(placement, consumer) == ({
        source: {'VCPU': 2, 'MEMORY_MB': 1024},
        dest: {'VCPU': 2, 'MEMORY_MB': 1024},
        # Shared storage is not taken twice.
        shared: {'DISK_GB': 10}}, 2)
    assert set(report['merged_with']) == {source, shared}
    # The allocation request given is left as it was (Nova's loop reuses
    # it for the next instance).
    assert set(ask['allocations']) == {dest, shared}

    # Undoing the move's claim gives back the destination only.
    assert placement_claims.give_back(client, consumer, [dest],
                                      backoff=no_pause)
    assert held(placement, consumer)[0] == {
        source: {'VCPU': 2, 'MEMORY_MB': 1024}, shared: {'DISK_GB': 10}}


def test_release_removes_exactly_the_request_consumers(placement, client):
    rp = provider(placement)
    mine = [str(uuid.uuid4()) for _ in range(2)]
    other = str(uuid.uuid4())
    for consumer in mine + [other]:
        assert placement_claims.claim(client, consumer, request(rp),
                                      PROJECT, USER)
    never_claimed = str(uuid.uuid4())

    released = placement_claims.release(client, mine + [never_claimed])

    assert released == mine
    for consumer in mine:
        assert held(placement, consumer)[0] == {}
    assert held(placement, other)[0] == {
        rp: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}}
    assert usage(placement, rp)['VCPU'] == 1


def test_release_with_generation_safety(placement, client):
    rp = provider(placement)
    consumer = str(uuid.uuid4())
    assert placement_claims.claim(client, consumer, request(rp),
                                  PROJECT, USER)

    def other_writer():
        body = placement.get('/allocations/%s' % consumer)
        placement.put('/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': {'VCPU': 5}}},
            'consumer_generation': body['consumer_generation'],
            'project_id': PROJECT, 'user_id': USER,
            'consumer_type': 'INSTANCE'})

    racing = placement_client.PlacementClient(
        _Interleaved(placement.adapter, other_writer))
    with pytest.raises(placement_claims.ConsumerConflict):
        placement_claims.release(racing, [consumer], force=False)
    assert held(placement, consumer)[0] == {rp: {'VCPU': 5}}

    assert placement_claims.release(client, [consumer], force=False) == [
        consumer]
    assert held(placement, consumer)[0] == {}


def unreachable_client():
    # A port nothing listens on.
    session = ks_session.Session()
    return placement_client.PlacementClient(ks_adapter.Adapter(
        session, endpoint_override='http://127.0.0.1:9'))


def test_unreachable_placement_is_named():
    with pytest.raises(placement_client.PlacementUnreachable,
                       match='Placement is unreachable'):
        placement_claims.claim(unreachable_client(), str(uuid.uuid4()),
                               request(str(uuid.uuid4())), PROJECT, USER)
    # A release logs what it could not remove and goes on.
    assert placement_claims.release(unreachable_client(),
                                    [str(uuid.uuid4())]) == []
