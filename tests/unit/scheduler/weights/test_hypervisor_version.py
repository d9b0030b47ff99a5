import pytest

from scheduler.weights import hypervisor_version
from tests.unit.scheduler import fakes


def _hosts():
    return [fakes.host_state(name, hypervisor_version=version)
            for name, version in zip('abc', [6000000, 8002000, 7001000])]


def test_prefers_newer_hypervisors():
    weigher = hypervisor_version.HypervisorVersionWeigher()
    assert fakes.raw_weights(weigher, _hosts()) == [6000000, 8002000,
                                                    7001000]
    totals = fakes.weigh([weigher], _hosts())
    assert totals == pytest.approx([0.0, 1.0, 1001000 / 2002000])


def test_negative_multiplier_prefers_older(config):
    config.config(hypervisor_version_weight_multiplier=-1.0,
                  group='filter_scheduler')
    totals = fakes.weigh([hypervisor_version.HypervisorVersionWeigher()],
                         _hosts())
    assert max(range(3), key=totals.__getitem__) == 0


def test_no_version_weighs_zero():
    weigher = hypervisor_version.HypervisorVersionWeigher()
    states = [fakes.host_state('a', hypervisor_version=None),
              fakes.host_state('b', hypervisor_version=2)]
    assert fakes.raw_weights(weigher, states) == [0, 2]
