import pytest

from scheduler.weights import pci
from tests.unit.scheduler import fakes


def _pools(*counts):
    return [{'vendor_id': '8086', 'product_id': '%04x' % index,
             'numa_node': 0, 'count': count}
            for index, count in enumerate(counts)]


def test_every_host_weighs_the_same_without_pci_devices():
    states = [fakes.host_state('a'), fakes.host_state('b', vcpus=64)]
    weigher = pci.PCIWeigher()
    assert fakes.raw_weights(weigher, states) == [100, 100]
    assert fakes.weigh([weigher], states) == [0.0, 0.0]
    assert weigher.weight_multiplier(states[0]) == 1.0


def test_fewer_free_devices_weigh_more_as_in_nova():
    # Free devices: 0; 3 + 1 - 2 used = 2; 500 (capped at 99).
    states = [fakes.host_state('none'),
              fakes.host_state('two', pci_device_pools=_pools(3, 1),
                               pci_usage={'x': 2}),
              fakes.host_state('many', pci_device_pools=_pools(500))]
    weigher = pci.PCIWeigher()
    assert [state.free_pci_devices for state in states] == [0, 2, 500]
    assert fakes.raw_weights(weigher, states) == [100, 98, 1]
    # Normalised: (w - 1) / 99.
    assert fakes.weigh([weigher], states) == pytest.approx(
        [1.0, 97 / 99, 0.0])


def test_a_host_whose_devices_are_all_used_weighs_as_one_without():
    states = [fakes.host_state('used', pci_device_pools=_pools(2),
                               pci_usage={'x': 2}),
              fakes.host_state('free', pci_device_pools=_pools(2))]
    assert fakes.raw_weights(pci.PCIWeigher(), states) == [100, 98]


def test_multiplier_may_not_be_negative(config):
    with pytest.raises(ValueError):
        config.config(pci_weight_multiplier=-1.0, group='filter_scheduler')
