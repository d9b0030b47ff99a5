import json

import pytest

from scheduler import exception
from scheduler.filters import json_filter
from scheduler.filters import json_query
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return json_filter.JsonFilter()


def _spec(query):
    text = query if isinstance(query, str) else json.dumps(query)
    return fakes.spec(scheduler_hints={'query': [text]})


def _states():
    return [fakes.host_state('a', memory_mb=1024, local_gb=100,
                             hypervisor_type='QEMU',
                             stats={'rack': 'r1', 'gpus': 2}),
            fakes.host_state('b', memory_mb=4096, local_gb=10,
                             hypervisor_type='xen', stats={'rack': 'r2'}),
            fakes.host_state('c', memory_mb=8192, local_gb=500,
                             hypervisor_type='QEMU', stats={})]


def test_no_query_passes_all(filt):
    assert fakes.passes(filt, _states(), fakes.spec()) == [True] * 3
    assert fakes.passes(filt, _states(), _spec([])) == [True] * 3


@pytest.mark.parametrize('command, args, expected', [
    ('=', [1, 1], True), ('=', [1, 2], False), ('<', [1, 2], True),
    ('<', [1, 1], False), ('<', [2, 1], False), ('>', [2, 1], True),
    ('>', [2, 2], False), ('>', [2, 3], False), ('<=', [1, 2], True),
    ('<=', [1, 1], True), ('<=', [2, 1], False), ('>=', [2, 1], True),
    ('>=', [2, 2], True), ('>=', [2, 3], False), ('in', [1, 1], True),
    ('in', [1, 1, 2, 3], True), ('in', [4, 1, 2, 3], False),
    ('not', [True], False), ('not', [False], True),
    ('or', [True, False], True), ('or', [False, False], False),
    ('and', [True, True], True), ('and', [False, False], False),
    ('and', [True, False], False),
    ('and', [['or', True, False], ['>', 2, 1]], True),
    # All of the others must compare true; one argument is not enough.
    ('<', [1, 2, 3], True), ('<', [2, 3, 1], False), ('=', [1], False),
])
def test_commands(filt, command, args, expected):
    assert fakes.passes(filt, _states(), _spec([command] + args)) == [
        expected] * 3


def test_variables(filt):
    query = ['and', ['>=', '$free_ram_mb', 2048],
             ['>', '$free_disk_mb', 200 * 1024]]
    assert fakes.passes(filt, _states(), _spec(query)) == [
        False, False, True]
    assert fakes.passes(filt, _states(), _spec(
        ['in', '$hypervisor_type', 'QEMU', 'kvm'])) == [True, False, True]
    assert fakes.passes(filt, _states(), _spec(
        ['=', '$stats.rack', 'r2'])) == [False, True, False]


def test_missing_variables_are_dropped(filt):
    # Host c has no stats.rack: ['=', 'r1'] has one argument: false.
    assert fakes.passes(filt, _states(), _spec(
        ['=', '$stats.rack', 'r1'])) == [True, False, False]
    # Dropping shifts the arguments: 3 >= 2 for the hosts without gpus.
    assert fakes.passes(filt, _states(), _spec(
        ['>=', '$stats.gpus', 3, 2])) == [False, True, True]


def test_comparing_a_string_with_a_number_is_false(filt):
    assert fakes.passes(filt, _states(), _spec(
        ['<', '$hypervisor_type', 5])) == [False] * 3
    assert fakes.passes(filt, _states(), _spec(
        ['<', '$free_ram_mb', 'lots'])) == [False] * 3


def test_not_yields_a_list_as_in_nova(filt):
    # At the top a list passes if any item is true...
    assert fakes.passes(filt, _states(), _spec(
        ['not', ['=', '$hypervisor_type', 'xen']])) == [True, False, True]
    # ...inside and/or a non-empty list is true, whatever it holds.
    assert fakes.passes(filt, _states(), _spec(
        ['and', ['not', True]])) == [True] * 3


@pytest.mark.parametrize('query', [
    ['__import__', 'os'],
    ['eval', '1'],
    [['=', 1, 1]],
    '{"=": 1}',
    '"and"',
    '5',
    'not json',
])
def test_queries_that_reach_for_code_are_refused(filt, query):
    with pytest.raises(exception.InvalidRequest) as error:
        filt.host_passes(_states()[0], _spec(query))
    assert 'JsonFilter query' in str(error.value)
    with pytest.raises(exception.InvalidRequest):
        fakes.passes(filt, _states(), _spec(query))


@pytest.mark.parametrize('query, unknown, expected', [
    # ['=', 1] is left: one argument is false, on every host.
    (['=', '$__class__', 1], ('$__class__',), [False] * 3),
    (['=', '$consumed', 1], ('$consumed',), [False] * 3),
    (['=', '$', 1], ('$',), [False] * 3),
    (['=', '$service.topic', 'compute'], ('$service.topic',), [False] * 3),
    # The typo's comparison is false; the other one decides.
    (['or', ['=', '$free_ram', 2048], ['=', '$host', 'a']], ('$free_ram',),
     [True, False, False]),
    # Dropping shifts the arguments: ['in', '$host', 'b'].
    (['in', '$flavor_name', '$host', 'b'], ('$flavor_name',),
     [False, True, False]),
])
def test_unknown_variables_are_read_as_null(filt, query, unknown, expected):
    """Nova's JsonFilter reads getattr(host_state, name, None) and drops a
    None argument; Gantt never looks the name up, but drops it alike."""
    assert fakes.passes(filt, _states(), _spec(query)) == expected
    assert json_query.parse(json.dumps(query)).unknown == unknown


def test_unknown_variables_are_logged_once_per_request(filt, caplog):
    """One INFO line per request, whatever the number of hosts and of
    paths that read the query; the reason for a removed host names it."""
    spec = _spec(['=', '$free_ram', 2048])
    with caplog.at_level('DEBUG', logger='scheduler.filters.json_filter'):
        fakes.passes(filt, _states(), spec)
        fakes.passes(filt, _states(), spec)
    infos = [r for r in caplog.records if r.levelname == 'INFO']
    assert len(infos) == 1
    assert '$free_ram' in infos[0].getMessage()
    debugs = [r.getMessage() for r in caplog.records
              if r.levelname == 'DEBUG']
    assert len(debugs) == 6
    assert all('$free_ram' in message for message in debugs)
    caplog.clear()
    with caplog.at_level('INFO', logger='scheduler.filters.json_filter'):
        fakes.passes(filt, _states(), _spec(['=', '$free_ram', 2048]))
    assert len(caplog.records) == 1
    assert filt.request_notes(spec) == [
        'the query names $free_ram, which no host has: read as null and '
        'dropped, as Nova does']
    assert filt.request_notes(_spec(['=', '$host', 'a'])) == []


def test_service_fields(filt):
    """Nova walks $service.<field> through the host's service record."""
    states = [fakes.host_state('a'),
              fakes.host_state('b', svc=fakes.service('b', disabled=True,
                                                      reason='maint')),
              fakes.host_state('c', svc=None)]
    # c has no service: ['not'] is the empty list, which fails.
    assert fakes.passes(filt, states, _spec(
        ['not', '$service.disabled'])) == [True, False, False]
    assert fakes.passes(filt, states, _spec(
        ['=', '$service.disabled', False])) == [True, False, False]
    assert fakes.passes(filt, states, _spec(
        ['=', '$service.disabled_reason', 'maint'])) == [False, True, False]
    assert fakes.passes(filt, states, _spec(
        ['in', '$service.host', 'a', 'c'])) == [True, False, False]


def _nested(depth, inner='["=", 1, 1]'):
    return '["and", ' * depth + inner + ']' * depth


@pytest.mark.parametrize('text, words', [
    (_nested(json_query.MAX_QUERY_DEPTH), 'nested deeper than'),
    (_nested(100000), 'characters long'),
    ('[' * 50000, 'nested deeper than'),
    ('{"a": ' * 40 + '1' + '}' * 40, 'nested deeper than'),
])
def test_deep_or_long_queries_are_refused_before_json_reads_them(
        filt, text, words):
    with pytest.raises(exception.InvalidRequest, match=words):
        filt.host_passes(_states()[0], _spec(text))


def test_brackets_inside_strings_do_not_count_as_nesting(filt):
    query = '["in", "$host", "%s", "a"]' % ('[' * 100)
    assert json_query.parse(_nested(json_query.MAX_QUERY_DEPTH - 1, query))
    assert fakes.passes(filt, _states(), _spec(query)) == [True, False, False]


def test_keys_below_a_variable_never_reach_attributes():
    # Past the first name, only dictionary keys are looked up.
    query = json_query.parse('["=", "$stats.__class__", 1]')
    state = fakes.host_state(stats={})
    assert query.passes(state) is False
    assert json_query.lookup(state, ('host', 'upper')) is None


def test_many_distinct_values_agree(filt):
    states = [fakes.host_state('h%d' % n, memory_mb=1000 + n,
                               stats={'n': n % 7}) for n in range(300)]
    query = ['or', ['and', ['>', '$free_ram_mb', 1100],
                    ['in', '$stats.n', 1, 3]],
             ['=', '$host', 'h5']]
    result = fakes.passes(filt, states, _spec(query))
    assert result == [(n > 100 and n % 7 in (1, 3)) or n == 5
                      for n in range(300)]


def test_flags_as_nova():
    assert json_filter.JsonFilter.RUN_ON_REBUILD is False
    assert json_filter.JsonFilter.run_filter_once_per_request is False


def test_columns_per_group_and_host_by_host_agree(filt):
    states = [fakes.host_state('h%d' % n, memory_mb=1000 + n,
                               stats={'n': n % 7}) for n in range(300)]
    # Grouped by stats.n, free_ram_mb compared as a column per group.
    query = ['and', ['>', '$free_ram_mb', 1100], ['in', '$stats.n', 1, 3]]
    assert fakes.passes(filt, states, _spec(query)) == [
        n > 100 and n % 7 in (1, 3) for n in range(300)]
    # Comparing the list 'not' yields: evaluated host by host.
    query = ['=', ['not', ['>', '$free_ram_mb', 1200]], ['not', True]]
    assert fakes.passes(filt, states, _spec(query)) == [
        n > 200 for n in range(300)]
