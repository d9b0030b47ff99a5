"""FilterScheduler.explain: the same steps as select_destinations, nothing
claimed, with the hosts each filter removed and each weigher's part."""

import pytest

from scheduler.cmd import manage_explain
from scheduler.drivers import explain
from scheduler.drivers import filter_scheduler
from scheduler import exception
from scheduler import filters
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes as gf


@pytest.fixture
def driver(cloud, make_driver, config):
    config.config(ram_weight_multiplier=2.0, group='filter_scheduler')
    config.config(enabled_filters=[
        'AvailabilityZoneFilter', 'ComputeFilter', 'RamFilter', 'CoreFilter',
        'DiskFilter', 'ServerGroupAntiAffinityFilter'],
        group='filter_scheduler')
    cloud.add_node('big', memory_mb=16384)
    cloud.add_node('mid', memory_mb=8192)
    cloud.add_node('tiny', memory_mb=1024)
    cloud.add_node('off', memory_mb=16384)
    cloud.disable('off', reason='swap')
    return make_driver(filter_scheduler.FilterScheduler)


def test_filters_removed_hosts_with_reasons_and_weigher_parts(driver,
                                                              cloud):
    explanation = driver.explain(None, fakes.spec(memory_mb=2048))
    assert explanation.placed and explanation.total == 4
    [instance] = explanation.instances
    steps = {step.name: step for step in instance.steps}
    [off] = steps['ComputeFilter'].removed
    assert (off.host, off.node) == ('off', 'off')
    assert 'is disabled, reason: swap' in off.reason
    [tiny] = steps['RamFilter'].removed
    assert tiny.host == 'tiny' and '2048' in tiny.reason
    assert [(s.before, s.after) for s in instance.steps] == [
        (4, 4), (4, 3), (3, 2), (2, 2), (2, 2), (2, 2)]
    assert [entry.host for entry in instance.ranking] == ['big', 'mid']
    for entry in instance.ranking:
        assert entry.weight == pytest.approx(sum(v for _n, v in entry.parts))
    parts = dict(instance.ranking[0].parts)
    assert parts['RAMWeigher'] == pytest.approx(2.0)
    assert instance.chosen == ('big', 'big')
    # Without cells every host is in the one called default.
    assert instance.passing == {'default': 2}
    assert {entry.cell for entry in instance.ranking} == {'default'}
    assert tiny.cell == 'default'
    # Nothing was claimed, in SQL or in the cache.
    assert cloud.node_row('big').memory_mb_used == 0
    assert driver.stats['claims'] == 0


def test_no_valid_host_says_what_select_destinations_says(driver):
    spec = gf.spec(gf.group('anti-affinity'), num_instances=3,
                   memory_mb=4096)
    explanation = driver.explain(None, spec)
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, spec, fakes.uuids(3))
    assert not explanation.placed
    assert explanation.error == str(error.value)
    assert [i.chosen is None for i in explanation.instances] == [
        False, False, True]
    last = explanation.instances[-1]
    assert last.steps[0] == explain.FilterStep(
        filter_scheduler.EARLIER_INSTANCES, 4, 1, None)


def test_a_filter_that_logs_nothing_is_still_named():
    class Quiet(filters.BaseHostFilter):
        def host_passes(self, host_state, spec):
            return False

    class Disagrees(filters.BaseHostFilter):
        def host_passes(self, host_state, spec):
            return True

    state = fakes.host_state('h1')
    assert explain.reject_reason(Quiet(), state, fakes.spec()) == (
        'refused by Quiet')
    assert 'per-host path does not confirm' in explain.reject_reason(
        Disagrees(), state, fakes.spec())


def test_json_filter_unknown_variables_are_noted(cloud, make_driver, config,
                                                 capsys):
    """Nova reads an unknown $variable as null: ``["=", "$free_ram", 1]``
    keeps one argument and fails every host, ``["not", ...]`` of it is
    the list [True] and passes every host. Explain notes the variable in
    both cases, and names it in the reason for each removed host."""
    config.config(enabled_filters=['ComputeFilter', 'JsonFilter'],
                  group='filter_scheduler')
    cloud.add_node('h1')
    cloud.add_node('h2')
    cloud.add_node('off')
    cloud.disable('off', reason='swap')
    driver = make_driver(filter_scheduler.FilterScheduler)
    note = ('the query names $free_ram, which no host has: read as null '
            'and dropped, as Nova does')

    def explained(query):
        spec = fakes.spec(scheduler_hints={'query': [query]})
        return driver.explain(None, spec)

    failing = explained('["=", "$free_ram", 1]')
    assert not failing.placed
    steps = {step.name: step for step in failing.instances[0].steps}
    assert steps['JsonFilter'].notes == (note,)
    assert steps['ComputeFilter'].notes == ()
    assert sorted(r.host for r in steps['JsonFilter'].removed) == [
        'h1', 'h2']
    assert all(note in r.reason for r in steps['JsonFilter'].removed)

    passing = explained('["not", ["=", "$free_ram", 1]]')
    assert passing.placed
    [step] = [s for s in passing.instances[0].steps
              if s.name == 'JsonFilter']
    assert (step.before, step.after, step.notes) == (2, 2, (note,))
    assert step.removed == []

    manage_explain._print_instance(passing.instances[0], 1)
    printed = capsys.readouterr().out
    assert 'Notes:' in printed and '$free_ram' in printed
