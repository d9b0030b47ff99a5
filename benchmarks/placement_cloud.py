"""Hosts with custom resource classes and traits, and requests for them.

The ``--filters placement`` set of ``select_destinations.py`` (issue
50): the default filters over hosts that report, besides ``VCPU``,
``MEMORY_MB`` and ``DISK_GB``, a random subset of 17 custom classes
(``CUSTOM_C01`` .. ``CUSTOM_C17``: 20 classes in the cloud), each with
probability :data:`CLASS_SHARE` and a total of 8-64, and 20-40 traits
from a vocabulary of 200 (100 standard names of os-traits and
``CUSTOM_T001`` .. ``CUSTOM_T100``, alternating). Traits are not all
alike: the n-th of the vocabulary is drawn with a weight of
``1 / (n + 10)``, so the first few are on most hosts and the last on a
few percent, as a cloud's CPU flags and its operator's labels are.

A rich request asks the flavor's sizes plus two required traits (drawn
with the same weights), one forbidden trait (drawn evenly among the
others) and two granular groups of one unit of two different custom
classes, ``group_policy=none`` (with one provider per host, ``isolate``
could never be met)::

    rng = random.Random(42)
    placement_cloud.write_extras(session, rng, node_ids)
    spec = placement_cloud.make_spec(rng, flavors)

The rows go to ``compute_node_inventories`` and ``compute_node_traits``
in bulk (one executemany per table and :data:`NODES_PER_CHUNK` nodes), as
:func:`scheduler.db.inventories.report` would leave them.
"""

import functools

import os_traits
import numpy as np
import sqlalchemy as sa

from scheduler.db import models
from scheduler.objects import request_spec

CLASSES = tuple('CUSTOM_C%02d' % number for number in range(1, 18))
# The chance that a host has a given custom class, and its totals.
CLASS_SHARE = 0.6
CLASS_TOTALS = (8, 16, 32, 64)
TRAITS_PER_HOST = (20, 40)
VOCABULARY_SIZE = 200
# Where the vocabulary's standard traits come from, in this order.
STANDARD_PREFIXES = ('HW_CPU_X86_', 'HW_NIC_OFFLOAD_', 'HW_GPU_API_')
# Nodes whose rows go in one executemany per table.
NODES_PER_CHUNK = 2000

_INVENTORY = models.ComputeNodeInventory.__table__
_TRAIT = models.ComputeNodeTrait.__table__


@functools.lru_cache(maxsize=1)
def vocabulary():
    """The 200 traits, most common first: 100 standard traits of os-traits
    (CPU flags, NIC offloads, GPU APIs: traits no part of the scheduler
    reads a meaning into, as ``HW_CPU_HYPERTHREADING`` is) and
    ``CUSTOM_T001`` .. ``CUSTOM_T100``, one of each in turn."""
    half = VOCABULARY_SIZE // 2
    known = sorted(os_traits.get_traits())
    standard = [name for prefix in STANDARD_PREFIXES for name in known
                if name.startswith(prefix)][:half]
    if len(standard) < half:
        raise RuntimeError('os-traits lists %d traits of %s, the benchmark '
                           'needs %d' % (len(standard),
                                         ', '.join(STANDARD_PREFIXES), half))
    custom = ['CUSTOM_T%03d' % number for number in range(1, half + 1)]
    return tuple(name for pair in zip(standard, custom) for name in pair)


def weights(count=VOCABULARY_SIZE):
    """The chance of each trait of the vocabulary at one draw."""
    raw = 1.0 / (np.arange(count) + 10.0)
    return raw / raw.sum()


def _generator(rng):
    return np.random.default_rng(rng.getrandbits(64))


def extras_rows(rng, node_ids):
    """``(inventory rows, trait rows)`` of the nodes ``node_ids``: dicts
    of the columns of ``compute_node_inventories`` and
    ``compute_node_traits`` (see the module's doc)."""
    generator = _generator(rng)
    traits = vocabulary()
    chance = weights(len(traits))
    count = len(node_ids)
    present = generator.random((count, len(CLASSES))) < CLASS_SHARE
    totals = generator.choice(CLASS_TOTALS, size=(count, len(CLASSES)))
    sizes = generator.integers(TRAITS_PER_HOST[0], TRAITS_PER_HOST[1] + 1,
                               size=count)
    inventory_rows, trait_rows = [], []
    for row, node_id in enumerate(node_ids):
        node_id = int(node_id)
        for index in np.flatnonzero(present[row]):
            total = int(totals[row, index])
            inventory_rows.append({
                'compute_node_id': node_id, 'resource_class': CLASSES[index],
                'total': total, 'reserved': 0, 'min_unit': 1,
                'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0,
                'used': 0})
        for index in generator.choice(len(traits), size=int(sizes[row]),
                                      replace=False, p=chance):
            trait_rows.append({'compute_node_id': node_id,
                               'trait': traits[index]})
    return inventory_rows, trait_rows


def write_extras(session, rng, node_ids):
    """Draw the nodes' classes and traits (:func:`extras_rows`) and insert
    them, :data:`NODES_PER_CHUNK` nodes at a time, each table's rows in
    one executemany (100,000 nodes' rows are millions: never all held
    at once, never one statement per node)."""
    for start in range(0, len(node_ids), NODES_PER_CHUNK):
        inventory_rows, trait_rows = extras_rows(
            rng, node_ids[start:start + NODES_PER_CHUNK])
        session.execute(sa.insert(_INVENTORY), inventory_rows)
        session.execute(sa.insert(_TRAIT), trait_rows)


def extra_specs(rng):
    """A rich request's extra specs (see the module's doc)."""
    generator = _generator(rng)
    traits = vocabulary()
    required = generator.choice(len(traits), size=2, replace=False,
                                p=weights(len(traits)))
    others = [index for index in range(len(traits))
              if index not in required]
    forbidden = others[int(generator.integers(len(others)))]
    first, second = generator.choice(len(CLASSES), size=2, replace=False)
    specs = {'trait:%s' % traits[index]: 'required' for index in required}
    specs['trait:%s' % traits[forbidden]] = 'forbidden'
    specs['resources1:%s' % CLASSES[first]] = '1'
    specs['resources2:%s' % CLASSES[second]] = '1'
    specs['group_policy'] = 'none'
    return specs


def make_spec(rng, flavors):
    """A rich request: one of ``flavors`` (``(vcpus, memory_mb,
    root_gb)``) with :func:`extra_specs`."""
    vcpus, memory_mb, root_gb = rng.choice(flavors)
    flavor = request_spec.Flavor(vcpus=vcpus, memory_mb=memory_mb,
                                 root_gb=root_gb,
                                 extra_specs=extra_specs(rng))
    return request_spec.RequestSpec(flavor=flavor, num_instances=1)
