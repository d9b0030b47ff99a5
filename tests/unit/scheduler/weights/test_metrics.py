import pytest

from scheduler import exception
from scheduler.weights import metrics
from tests.unit.scheduler import fakes


def _metrics(**values):
    return [{'name': name.replace('_', '.'), 'value': value}
            for name, value in values.items()]


def _hosts():
    return [fakes.host_state('a', metrics=_metrics(foo=512, bar=1)),
            fakes.host_state('b', metrics=_metrics(foo=1024, bar=2)),
            fakes.host_state('c', metrics=_metrics(foo=3072, bar=1)),
            fakes.host_state('d', metrics=_metrics(foo=8192, bar=0))]


@pytest.fixture
def setting(config):
    def set_(*items, **options):
        config.config(weight_setting=list(items), group='metrics',
                      **options)
    return set_


def test_no_setting_weighs_zero():
    assert fakes.raw_weights(metrics.MetricsWeigher(), _hosts()) == [0.0] * 4


def test_weighted_sum(setting):
    setting('foo=1', 'bar=-1024')
    weigher = metrics.MetricsWeigher()
    assert fakes.raw_weights(weigher, _hosts()) == [
        512 - 1024, 1024 - 2048, 3072 - 1024, 8192]
    totals = fakes.weigh([weigher], _hosts())
    assert max(range(4), key=totals.__getitem__) == 3


def test_negative_multiplier(setting):
    setting('foo=1', weight_multiplier=-1.0)
    totals = fakes.weigh([metrics.MetricsWeigher()], _hosts())
    assert totals == pytest.approx([0.0, -512 / 7680, -2560 / 7680, -1.0])


def test_missing_metric_required_fails_the_request(setting):
    setting('foo=1', 'baz=1')
    weigher = metrics.MetricsWeigher()
    with pytest.raises(metrics.ComputeHostMetricNotFound) as error:
        weigher._weigh_object(_hosts()[0], fakes.spec())
    assert isinstance(error.value, exception.NoValidHost)
    assert 'baz' in str(error.value)
    with pytest.raises(metrics.ComputeHostMetricNotFound):
        fakes.weigh([weigher], _hosts())


def test_missing_metric_not_required_weighs_unavailable(setting):
    setting('foo=1', 'baz=1', required=False)
    states = _hosts()
    states[2] = fakes.host_state('c', metrics=_metrics(foo=1, baz=5))
    assert fakes.raw_weights(metrics.MetricsWeigher(), states) == [
        -10000.0, -10000.0, 6.0, -10000.0]


def test_zero_ratio_or_multiplier_skips_missing_metric(setting):
    setting('foo=1', 'baz=0', required=False)
    assert fakes.raw_weights(metrics.MetricsWeigher(), _hosts()) == [
        512, 1024, 3072, 8192]
    setting('foo=1', 'baz=1', required=False, weight_multiplier=0.0)
    assert fakes.raw_weights(metrics.MetricsWeigher(), _hosts()) == [
        512, 1024, 3072, 8192]


def test_aggregate_multiplier_key(setting):
    setting('foo=1')
    agg = fakes.aggregate('x', ['a'], metrics_weight_multiplier='-2')
    states = _hosts()
    states[0] = fakes.host_state('a', metrics=_metrics(foo=512),
                                 aggregates=[agg])
    weigher = metrics.MetricsWeigher()
    assert weigher.weight_multiplier(states[0]) == -2.0
    assert weigher.weight_multiplier(states[1]) == 1.0


def test_values_that_are_no_numbers_are_missing(setting):
    setting('foo=1', required=False)
    states = [fakes.host_state('a', metrics=_metrics(foo='high')),
              fakes.host_state('b', metrics=_metrics(foo=2))]
    assert fakes.raw_weights(metrics.MetricsWeigher(), states) == [
        -10000.0, 2.0]


def test_parse_setting(caplog):
    assert metrics.parse_setting([' a = 1.5', 'b=-2', 'c', '=3', 'd=x'],
                                 'opt') == [('a', 1.5), ('b', -2.0)]
    assert 'c, =3, d=x' in caplog.text
