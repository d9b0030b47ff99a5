import pytest

from scheduler.filters import metrics_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return metrics_filter.MetricsFilter()


def _metrics(**values):
    return [{'name': name.replace('_', '.'), 'value': value,
             'source': 'test'} for name, value in values.items()]


def test_hosts_must_report_every_weighed_metric(filt, config):
    config.config(weight_setting=['cpu.percent=-1.0', 'memory.free = 2'],
                  group='metrics')
    states = [fakes.host_state('a', metrics=_metrics(cpu_percent=1,
                                                     memory_free=2)),
              fakes.host_state('b', metrics=_metrics(cpu_percent=1)),
              fakes.host_state('c'),
              fakes.host_state('d', metrics=_metrics(cpu_percent=None,
                                                     memory_free='x'))]
    assert fakes.passes(filt, states, fakes.spec()) == [
        True, False, False, True]


def test_no_setting_passes_all(filt):
    assert fakes.passes(filt, [fakes.host_state()], fakes.spec()) == [True]


def test_invalid_setting_items_are_ignored(filt, config, caplog):
    config.config(weight_setting=['cpu.percent', 'x=y', 'load=1'],
                  group='metrics')
    states = [fakes.host_state('a', metrics=_metrics(load=3)),
              fakes.host_state('b', metrics=_metrics(cpu_percent=3))]
    assert fakes.passes(filt, states, fakes.spec()) == [True, False]
    assert 'Ignoring the invalid elements' in caplog.text


def test_flags_as_nova():
    assert metrics_filter.MetricsFilter.RUN_ON_REBUILD is False
