import pytest

from scheduler.weights import pci
from tests.unit.scheduler import fakes


def test_every_host_weighs_zero_without_pci_devices():
    states = [fakes.host_state('a'), fakes.host_state('b', vcpus=64)]
    weigher = pci.PCIWeigher()
    assert fakes.raw_weights(weigher, states) == [0.0, 0.0]
    assert fakes.weigh([weigher], states) == [0.0, 0.0]
    assert weigher.weight_multiplier(states[0]) == 1.0


def test_multiplier_may_not_be_negative(config):
    with pytest.raises(ValueError):
        config.config(pci_weight_multiplier=-1.0, group='filter_scheduler')
