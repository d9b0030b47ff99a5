import pytest

from scheduler.filters import exact_core_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return exact_core_filter.ExactCoreFilter()


def test_only_the_exact_free_vcpus_pass(filt):
    # Free vCPUs: 8 - 0, 8 - 2, 8 - 8; no ratio (16.0 here) counts.
    states = [fakes.host_state(vcpus=8),
              fakes.host_state(vcpus=8, vcpus_used=2),
              fakes.host_state(vcpus=8, vcpus_used=8)]
    assert fakes.passes(filt, states, fakes.spec(vcpus=8)) == [
        True, False, False]
    assert fakes.passes(filt, states, fakes.spec(vcpus=6)) == [
        False, True, False]
    assert fakes.passes(filt, states, fakes.spec(vcpus=9)) == [
        False, False, False]
    assert fakes.passes(filt, states, fakes.spec(vcpus=0)) == [
        False, False, True]


def test_a_node_without_vcpus_passes_nothing(filt):
    # Its free vCPUs (0 - 0) equal the flavor's 0, but Nova took a node
    # reporting no vCPUs for a broken one.
    states = [fakes.host_state(vcpus=0), fakes.host_state(vcpus=1)]
    assert fakes.passes(filt, states, fakes.spec(vcpus=0)) == [False, False]
    assert fakes.passes(filt, states, fakes.spec(vcpus=1)) == [False, True]


def test_flags_as_nova():
    assert not exact_core_filter.ExactCoreFilter.RUN_ON_REBUILD
    assert not exact_core_filter.ExactCoreFilter.run_filter_once_per_request
