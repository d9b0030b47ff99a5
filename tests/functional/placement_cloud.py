"""Random clouds and requests, told to Placement and to Gantt alike.

``Cloud(seed)`` draws providers (roots, NUMA-cell-like and PF-like
children, now and then a grandchild), their inventories (standard and
``CUSTOM_`` classes, reserved amounts, ratios, min/max units and steps),
traits and aggregates, and some usage. ``load(client)`` writes it through
Placement's REST API (usage as real allocations); ``providers()`` gives the
same cloud as Gantt's :class:`~scheduler.resources.provider_columns.Provider`
rows. ``Draw(cloud, rng).request()`` draws a request as both Placement's
query string and Gantt's :class:`~scheduler.resources.request.ResourceRequest`.
"""

import random
import urllib.parse
import uuid

from scheduler.resources import provider_columns
from scheduler.resources import request as request_mod

TRAITS = ('HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE42', 'HW_NIC_SRIOV',
          'COMPUTE_VOLUME_MULTI_ATTACH', 'CUSTOM_GOLD', 'CUSTOM_SILVER',
          'CUSTOM_PHYSNET_A', 'CUSTOM_PHYSNET_B')
CUSTOM_CLASSES = ('CUSTOM_GPU', 'CUSTOM_FPGA')
AMOUNTS = {
    'VCPU': (1, 2, 3, 4, 6),
    'MEMORY_MB': (256, 512, 1024, 2048, 3000),
    'DISK_GB': (5, 10, 50, 100),
    'SRIOV_NET_VF': (1, 2, 3),
    'CUSTOM_GPU': (1, 2),
    'CUSTOM_FPGA': (1,),
}


def _inventory(rng, name):
    """A random inventory of one class, small enough to run out."""
    if name == 'VCPU':
        return provider_columns.Inventory(
            rng.randint(2, 16), reserved=rng.choice((0, 0, 1)),
            allocation_ratio=rng.choice((1.0, 1.5, 2.0)),
            max_unit=rng.choice((None, None, 4)))
    if name == 'MEMORY_MB':
        total = rng.choice((1024, 2048, 4096, 8192))
        step = rng.choice((1, 1, 256))
        return provider_columns.Inventory(
            total, reserved=rng.choice((0, 512)) if total > 1024 else 0,
            allocation_ratio=rng.choice((1.0, 1.5)), step_size=step,
            min_unit=rng.choice((1, 512)) if step == 1 else step)
    if name == 'DISK_GB':
        total = rng.randint(20, 200)
        return provider_columns.Inventory(
            total, max_unit=rng.choice((None, 60)),
            min_unit=rng.choice((1, 1, 10)))
    return provider_columns.Inventory(rng.randint(1, 8),
                                      reserved=rng.choice((0, 0, 1)))


class Cloud:
    """One random cloud: ``rows`` are dicts with uuid, parent, inventories,
    traits, aggregates, used."""

    def __init__(self, seed, roots=110, rows=None):
        """A random cloud of ``roots`` trees; or, with ``rows`` (parents
        before their children, ``used`` filled in), that cloud."""
        rng = random.Random(seed)
        self.rng = rng
        self.aggregates = [str(uuid.UUID(int=rng.getrandbits(128)))
                           for _ in range(4)]
        self.rows = []
        self.given = rows is not None
        if self.given:
            self.rows = list(rows)
        for _ in range(0 if self.given else roots):
            self._tree(rng)
        self.root_of = {}
        for row in self.rows:
            parent = row['parent']
            self.root_of[row['uuid']] = (
                row['uuid'] if parent is None else self.root_of[parent])
        self.nested = {row['uuid'] for row in self.rows if row['parent']}
        self.trees = {}
        for row in self.rows:
            self.trees.setdefault(self.root_of[row['uuid']], []).append(row)

    def _row(self, rng, parent, classes):
        row = {
            'uuid': str(uuid.UUID(int=rng.getrandbits(128))),
            'parent': parent,
            'inventories': {name: _inventory(rng, name) for name in classes},
            'traits': frozenset(t for t in TRAITS if rng.random() < 0.3),
            'aggregates': frozenset(a for a in self.aggregates
                                    if rng.random() < 0.25),
            'used': {},
        }
        self.rows.append(row)
        return row['uuid']

    def _tree(self, rng):
        shape = rng.random()
        if shape < 0.5:
            self._row(rng, None, _some(rng, ('VCPU', 'MEMORY_MB', 'DISK_GB',
                                             'CUSTOM_GPU'), 0.85))
            return
        root = self._row(rng, None, _some(rng, ('VCPU', 'DISK_GB'), 0.6))
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            if kind < 0.45:
                cell = self._row(rng, root, ('VCPU', 'MEMORY_MB'))
                if rng.random() < 0.15:
                    self._row(rng, cell, ('CUSTOM_GPU',))
            elif kind < 0.85:
                self._row(rng, root, ('SRIOV_NET_VF',))
            else:
                self._row(rng, root, _some(rng, ('CUSTOM_GPU', 'DISK_GB'),
                                           0.7))

    def load(self, client):
        """Write the cloud into Placement, usage as allocations."""
        traits = set(TRAITS).union(*(row['traits'] for row in self.rows))
        for name in sorted(traits):
            if name.startswith('CUSTOM_'):
                client.put('/traits/%s' % name)
        classes = set(CUSTOM_CLASSES).union(*(row['inventories']
                                              for row in self.rows))
        for name in sorted(classes):
            if name.startswith('CUSTOM_'):
                client.put('/resource_classes/%s' % name)
        for row in self.rows:
            body = {'uuid': row['uuid'], 'name': 'rp-' + row['uuid']}
            if row['parent']:
                body['parent_provider_uuid'] = row['parent']
            client.post('/resource_providers', body)
            base = '/resource_providers/%s' % row['uuid']
            answer = client.put(base + '/inventories', {
                'resource_provider_generation': 0,
                'inventories': {name: _inventory_body(inventory)
                                for name, inventory
                                in row['inventories'].items()}})
            generation = answer['resource_provider_generation']
            if row['traits']:
                generation = client.put(base + '/traits', {
                    'resource_provider_generation': generation,
                    'traits': sorted(row['traits'])})[
                        'resource_provider_generation']
            if row['aggregates']:
                client.put(base + '/aggregates', {
                    'resource_provider_generation': generation,
                    'aggregates': sorted(row['aggregates'])})
        self._use(client)

    def _use(self, client):
        """Allocate part of some providers' inventories (of a given cloud:
        its ``used`` amounts): one consumer per provider and class,
        written a few dozen per ``POST /allocations`` (webob spools a
        body over 10 kB to a temporary file it never closes: a
        ResourceWarning)."""
        rng = self.rng
        consumers = {}
        for row in self.rows:
            for name, inventory in row['inventories'].items():
                if self.given:
                    amount = row['used'].get(name)
                    if not amount:
                        continue
                elif rng.random() > 0.35:
                    continue
                else:
                    amount = _usable(rng, inventory)
                if amount is None:
                    continue
                consumers[str(uuid.UUID(int=rng.getrandbits(128)))] = {
                    'allocations': {row['uuid']: {
                        'resources': {name: amount}}},
                    'project_id': 'p', 'user_id': 'u',
                    'consumer_generation': None, 'consumer_type': 'INSTANCE'}
                row['used'][name] = amount
        names = sorted(consumers)
        for start in range(0, len(names), 25):
            client.post('/allocations', {
                name: consumers[name] for name in names[start:start + 25]})

    def providers(self):
        return [provider_columns.Provider(
            row['uuid'], row['parent'], dict(row['inventories']),
            dict(row['used']), row['traits'], row['aggregates'])
            for row in self.rows]


def _some(rng, names, chance):
    chosen = tuple(name for name in names if rng.random() < chance)
    return chosen or names[:1]


def _usable(rng, inventory):
    """An amount one allocation may take, or None."""
    amounts = _fitting(inventory, 0)
    return rng.choice(amounts) if amounts else None


def _fitting(inventory, used):
    """The amounts one more allocation may take once ``used`` is held."""
    top = min(inventory.capacity() - used,
              inventory.max_unit or inventory.total)
    return list(range(inventory.min_unit, top + 1, inventory.step_size))


def _inventory_body(inventory):
    return {'total': inventory.total, 'reserved': inventory.reserved,
            'min_unit': inventory.min_unit,
            'max_unit': inventory.max_unit or inventory.total,
            'step_size': inventory.step_size,
            'allocation_ratio': inventory.allocation_ratio}


class Draw:
    """Random requests over one cloud.

    Most requests (``OFFERED``) are drawn from what one random tree offers:
    classes its providers still have room for, traits and aggregates of
    those providers, then sharpened with what the tree lacks (a forbidden
    trait or aggregate, a root trait) and sometimes a second group or
    ``isolate``. They mostly have candidates, and only on the trees alike
    enough. The rest are drawn blind from every class, trait and aggregate:
    those mostly have none.
    """

    OFFERED = 0.7

    def __init__(self, cloud, rng):
        self.cloud = cloud
        self.rng = rng
        self.roots = sorted(cloud.trees)

    def request(self):
        if self.rng.random() < self.OFFERED:
            request = self._offered_request()
            if request is not None:
                return request
        return self._blind_request()

    # Requests from one tree's offer.

    def _offered_request(self):
        rng = self.rng
        root = rng.choice(self.roots)
        tree = self.cloud.trees[root]
        offers = [(row, name, amounts) for row in tree
                  for name, inventory in sorted(row['inventories'].items())
                  if (amounts := _fitting(inventory,
                                          row['used'].get(name, 0)))]
        if not offers:
            return None
        groups = []
        if rng.random() < 0.8:
            groups.append(self._offered_group(
                '', rng.sample(offers, min(len(offers), rng.randint(1, 2)))))
        for number in range(rng.choice((0, 1, 1, 2))):
            groups.append(self._offered_group(
                str(number + 1), [rng.choice(offers)]))
        if not groups:
            groups.append(self._offered_group('1', [rng.choice(offers)]))
        root_row = tree[0]
        root_required = root_forbidden = frozenset()
        if root_row['traits'] and rng.random() < 0.15:
            root_required = frozenset(
                rng.sample(sorted(root_row['traits']), 1))
        lacking = sorted(set(TRAITS) - root_row['traits'])
        if lacking and rng.random() < 0.15:
            root_forbidden = frozenset(rng.sample(lacking, 1))
        return request_mod.ResourceRequest(
            tuple(groups), self._policy(groups), root_required,
            root_forbidden)

    def _offered_group(self, suffix, offers):
        """A group asking for what ``offers`` (row, class, amounts that
        fit) hold, with traits and aggregates of those rows."""
        rng = self.rng
        resources = {}
        for _row, name, amounts in offers:
            if rng.random() < 0.5:
                amounts = amounts[:max(1, len(amounts) // 4)]
            resources.setdefault(name, rng.choice(amounts))
        rows = [row for row, _name, _amounts in offers]
        had = frozenset().union(*(row['traits'] for row in rows))
        required = forbidden = frozenset()
        if had and rng.random() < 0.4:
            required = frozenset(rng.sample(sorted(had), 1))
        lacking = sorted(set(TRAITS) - had)
        if lacking and rng.random() < 0.35:
            forbidden = frozenset(rng.sample(lacking, 1))
        member_of = ()
        within = sorted(frozenset().union(
            *(row['aggregates'] for row in rows)))
        if within and rng.random() < 0.3:
            chosen = set(rng.sample(within, 1))
            if rng.random() < 0.3:
                chosen.add(rng.choice(self.cloud.aggregates))
            member_of = (frozenset(chosen),)
        forbidden_aggregates = frozenset()
        outside = sorted(set(self.cloud.aggregates) - set(within))
        if outside and rng.random() < 0.15:
            forbidden_aggregates = frozenset(rng.sample(outside, 1))
        return request_mod.RequestGroup(
            suffix, resources, required, forbidden, member_of,
            forbidden_aggregates)

    # Requests drawn blind.

    def _blind_group(self, suffix, classes):
        rng = self.rng
        resources = {name: rng.choice(AMOUNTS[name]) for name in classes}
        required = frozenset(t for t in TRAITS if rng.random() < 0.07)
        forbidden = frozenset(t for t in TRAITS
                              if t not in required and rng.random() < 0.05)
        member_of = ()
        if rng.random() < 0.2:
            member_of = tuple(
                frozenset(rng.sample(self.cloud.aggregates,
                                     rng.randint(1, 2)))
                for _ in range(rng.randint(1, 2)))
        forbidden_aggregates = frozenset()
        if rng.random() < 0.1:
            forbidden_aggregates = frozenset(
                rng.sample(self.cloud.aggregates, 1))
        return request_mod.RequestGroup(
            suffix, resources, required, forbidden, member_of,
            forbidden_aggregates)

    def _blind_request(self):
        rng = self.rng
        names = sorted(AMOUNTS)
        groups = []
        if rng.random() < 0.85:
            groups.append(self._blind_group(
                '', rng.sample(names, rng.randint(1, 3))))
        for number in range(rng.choice((0, 0, 1, 1, 2, 3))):
            groups.append(self._blind_group(
                str(number + 1), rng.sample(names, rng.randint(1, 2))))
        if not groups:
            groups.append(self._blind_group('1', rng.sample(names, 1)))
        root_required = frozenset(t for t in TRAITS if rng.random() < 0.03)
        root_forbidden = frozenset(t for t in TRAITS if t not in root_required
                                   and rng.random() < 0.03)
        return request_mod.ResourceRequest(
            tuple(groups), self._policy(groups), root_required,
            root_forbidden)

    def _policy(self, groups):
        granular = sum(1 for group in groups if group.suffix)
        if granular > 1 or (granular and self.rng.random() < 0.5):
            return self.rng.choice(('none', 'isolate'))
        return None


def query(request):
    """Placement's query string of ``request``."""
    params = []
    for group in request.groups:
        suffix = group.suffix
        params.append(('resources' + suffix, ','.join(
            '%s:%d' % item for item in sorted(group.resources.items()))))
        traits = sorted(group.required_traits) + sorted(
            '!' + name for name in group.forbidden_traits)
        if traits:
            params.append(('required' + suffix, ','.join(traits)))
        for uuids in group.member_of:
            params.append(('member_of' + suffix, 'in:' + ','.join(
                sorted(uuids))))
        if group.forbidden_aggregates:
            params.append(('member_of' + suffix, '!in:' + ','.join(
                sorted(group.forbidden_aggregates))))
    if request.group_policy:
        params.append(('group_policy', request.group_policy))
    root = sorted(request.root_required) + sorted(
        '!' + name for name in request.root_forbidden)
    if root:
        params.append(('root_required', ','.join(root)))
    return '/allocation_candidates?' + urllib.parse.urlencode(params)
