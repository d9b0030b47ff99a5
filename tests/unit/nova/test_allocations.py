from scheduler.nova import allocations
from scheduler import placement_types


def test_allocation_request_names_the_provider_and_skips_zeros():
    request = allocations.allocation_request(
        'rp-1', placement_types.Resources(2, 2048, 0), {'CUSTOM_X': 1,
                                                        'PCPU': 0})
    assert request == {
        'allocations': {'rp-1': {'resources': {
            'VCPU': 2, 'MEMORY_MB': 2048, 'CUSTOM_X': 1}}},
        'mappings': {'': ['rp-1']}}
