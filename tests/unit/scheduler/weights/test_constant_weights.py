"""Weighers that find their weights flat from a whole column skip the
candidates' weights, and must weigh exactly as if they had not."""

import numpy as np
import pytest

from scheduler import weights
from scheduler.weights import build_failure
from scheduler.weights import hypervisor_version
from scheduler.weights import io_ops
from scheduler.weights import metrics
from scheduler.weights import pci
from tests.unit.scheduler import fakes

POOLS = [{'vendor_id': '8086', 'product_id': '1520', 'numa_node': 0,
          'count': 4, 'tags': {}}]

# (weigher, host keyword arguments of each host) with the weights equal on
# every host, then unequal.
CASES = [
    (build_failure.BuildFailureWeigher, [{'stats': {}}] * 3,
     [{'stats': {}}, {'stats': {'failed_builds': '2'}}, {'stats': {}}]),
    (hypervisor_version.HypervisorVersionWeigher,
     [{'hypervisor_version': 7}] * 3,
     [{'hypervisor_version': 7}, {'hypervisor_version': 9},
      {'hypervisor_version': 7}]),
    # minval 0: three hosts at 3 I/O operations each weigh 1.0, not 0.
    (io_ops.IoOpsWeigher, [{'io_workload': 3}] * 3,
     [{'io_workload': 0}, {'io_workload': 3}, {'io_workload': 1}]),
    (io_ops.IoOpsWeigher, [{'io_workload': 0}] * 3,
     [{'io_workload': 0}, {'io_workload': 0}, {'io_workload': 1}]),
    (pci.PCIWeigher, [{}] * 3,
     [{}, {'pci_device_pools': POOLS}, {}]),
    (metrics.MetricsWeigher, [{}] * 3, None),
]


def _contribution(weigher, states, skip_zero):
    table = fakes.table(states)
    rows = np.arange(len(states))
    found = dict(weights.HostWeightHandler().contributions(
        [weigher], table, rows, fakes.spec(), skip_zero=skip_zero))
    return table, rows, found.get(weigher)


def _without_shortcut(weigher, table, rows):
    raw = weigher.weigh_all(table, rows, fakes.spec())
    multipliers = weigher.weight_multipliers(table, rows)
    scaled = weights._scaled(np.asarray(raw, dtype=np.float64),
                             weigher.minval, weigher.maxval)
    return np.zeros(len(rows)) if scaled is None else scaled * multipliers


@pytest.mark.parametrize('weigher_class,equal,unequal', CASES)
def test_a_flat_column_weighs_as_the_full_computation(weigher_class, equal,
                                                      unequal):
    weigher = weigher_class()
    for hosts, constant in ((equal, True), (unequal or [], False)):
        if not hosts:
            continue
        states = [fakes.host_state('h%d' % number, **kwargs)
                  for number, kwargs in enumerate(hosts)]
        table, rows, found = _contribution(weigher, states, False)
        assert (weigher.constant_weight(table) is not None) == constant
        assert found.tolist() == _without_shortcut(
            weigher, table, rows).tolist()


def test_io_ops_at_one_level_above_minval_still_counts():
    states = [fakes.host_state('h%d' % n, io_workload=3) for n in range(3)]
    _table, _rows, found = _contribution(io_ops.IoOpsWeigher(), states, True)
    # Normalised against minval 0: 1.0 each, times the multiplier -1.0.
    assert found.tolist() == [-1.0, -1.0, -1.0]


def test_a_flat_column_is_skipped():
    states = [fakes.host_state('h%d' % n) for n in range(3)]
    for weigher in (build_failure.BuildFailureWeigher(),
                    hypervisor_version.HypervisorVersionWeigher(),
                    pci.PCIWeigher(), metrics.MetricsWeigher()):
        _table, _rows, found = _contribution(weigher, states, True)
        assert found is None, weigher


def test_constant():
    assert weights.constant(np.array([2, 2, 2])) == 2
    assert weights.constant(np.array([2.0, 3.0])) is None
    assert weights.constant(np.array([np.nan, np.nan])) is None
    assert weights.constant(np.array([])) is None


@pytest.mark.parametrize('value', [-5.0, 0.0, 3.0, 10.0, 12.0])
@pytest.mark.parametrize('minval', [None, 0, 3.0, 10])
@pytest.mark.parametrize('maxval', [None, 3, 10.0])
def test_flat_everywhere_judges_a_constant_as_normalize_would(value, minval,
                                                              maxval):
    """A column of one value is flat exactly when normalizing it gives
    zeros (both bounds given and equal, or neither moving it apart)."""

    class Constant(weights.BaseHostWeigher):
        def constant_weight(self, host_table):
            return value

    Constant.minval, Constant.maxval = minval, maxval
    table = fakes.table([fakes.host_state('h1')])
    expected = weights._scaled(np.array([value, value]), minval,
                               maxval) is None
    assert weights._flat_everywhere(Constant(), table) is expected
