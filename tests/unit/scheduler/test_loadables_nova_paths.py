"""A nova.conf's dotted paths to Nova's filters and weighers."""

import logging

import pytest

from scheduler import exception
from scheduler import loadables
from scheduler.filters import compute_filter
from scheduler.filters import ram_filter
from scheduler.weights import cpu
from scheduler.weights import ram


@pytest.fixture(autouse=True)
def fresh_log_memory(monkeypatch):
    """Each test sees the mappings logged as if for the first time."""
    monkeypatch.setattr(loadables, '_logged_nova_paths', set())


def _deprecations(caplog):
    return [record.getMessage() for record in caplog.records
            if record.getMessage().startswith('Deprecated:')]


def test_nova_all_filters_and_class_paths(caplog):
    caplog.set_level(logging.WARNING, logger=loadables.__name__)
    available = ['nova.scheduler.filters.all_filters']
    assert loadables.load_filter_classes(
        available, ['ComputeFilter', 'RamFilter']) == [
            compute_filter.ComputeFilter, ram_filter.RamFilter]
    assert loadables.load_filter_classes(
        ['nova.scheduler.filters.compute_filter.ComputeFilter'],
        ['ComputeFilter']) == [compute_filter.ComputeFilter]
    assert _deprecations(caplog) == [
        "Deprecated: [filter_scheduler] available_filters names Nova's "
        'filter nova.scheduler.filters.all_filters; Gantt uses its own '
        'all_filters instead. Write all_filters.',
        "Deprecated: [filter_scheduler] available_filters names Nova's "
        'filter nova.scheduler.filters.compute_filter.ComputeFilter; Gantt '
        'uses its own ComputeFilter instead. Write ComputeFilter.']


def test_each_mapping_is_logged_once(caplog):
    caplog.set_level(logging.WARNING, logger=loadables.__name__)
    for _ in range(3):
        loadables.load_weigher_classes(
            ['nova.scheduler.weights.all_weighers'])
    assert len(_deprecations(caplog)) == 1


def test_nova_modules_holding_several_classes():
    # Nova keeps its affinity filters and weighers in one module each.
    assert [cls.__name__ for cls in loadables.load_filter_classes(
        ['nova.scheduler.filters.affinity_filter.SameHostFilter'],
        ['SameHostFilter'])] == ['SameHostFilter']
    assert [cls.__name__ for cls in loadables.load_weigher_classes(
        ['nova.scheduler.weights.affinity.ServerGroupSoftAffinityWeigher'])
    ] == ['ServerGroupSoftAffinityWeigher']


def test_nova_weigher_paths():
    assert loadables.load_weigher_classes(
        ['nova.scheduler.weights.ram.RAMWeigher',
         'nova.scheduler.weights.cpu.CPUWeigher']) == [
             ram.RAMWeigher, cpu.CPUWeigher]
    every = loadables.load_weigher_classes(
        ['nova.scheduler.weights.all_weighers'])
    assert every == loadables.load_weigher_classes(['all_weighers'])


@pytest.mark.parametrize('path', [
    'nova.scheduler.filters.no_such.NoSuchFilter',
    # A class of Gantt's, but not a Nova path to a class.
    'nova.scheduler.filters.ComputeFilter',
])
def test_nova_filter_gantt_lacks_is_named(path):
    with pytest.raises(exception.PluginNotFound) as error:
        loadables.load_filter_classes([path], ['NoSuchFilter'])
    assert str(error.value).startswith("Unknown filter '%s'." % path)
    assert 'all_filters, ' in str(error.value)


def test_nova_weigher_gantt_lacks_is_named():
    path = 'nova.scheduler.weights.affinity.NoSuchWeigher'
    with pytest.raises(exception.PluginNotFound) as error:
        loadables.load_weigher_classes([path])
    assert str(error.value).startswith("Unknown weigher '%s'." % path)
