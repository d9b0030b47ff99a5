import logging

import numpy as np

from scheduler.filters import aggregate_metadata
from tests.unit.scheduler import fakes


def test_values_as_written_and_split_by_key():
    aggs = (fakes.aggregate('a', [], tenant='p1, p2', ratio='1.5'),
            fakes.aggregate('b', [], tenant='p3', ratio='2'))
    assert aggregate_metadata.values_of(aggs, 'tenant') == {'p1, p2', 'p3'}
    assert aggregate_metadata.values_of(aggs, 'none') == frozenset()
    assert aggregate_metadata.by_key(aggs) == {
        'tenant': {'p1', 'p2', 'p3'}, 'ratio': {'1.5', '2'}}


def test_minimum_wins_and_bad_values_use_the_default(caplog):
    aggs = (fakes.aggregate('a', [], limit='4'),
            fakes.aggregate('b', [], limit=' 2 '))
    assert aggregate_metadata.minimum_of(aggs, 'limit', 8, int) == 2
    assert aggregate_metadata.minimum_of((), 'limit', 8, int) == 8
    bad = aggs + (fakes.aggregate('c', [], limit='2.5'),)
    caplog.set_level(logging.WARNING)
    for _ in range(3):
        assert aggregate_metadata.minimum_of(bad, 'limit', 8, int) == 8
    # Remembered per set of aggregates: logged once.
    assert caplog.text.count('Could not decode aggregate metadata') == 1
    assert aggregate_metadata.minimum(['inf'], 1.0, float) == 1.0


def test_per_row_decides_once_per_set_of_aggregates():
    agg = fakes.aggregate('a', ['h1', 'h2'], limit='4')
    states = [fakes.host_state('h1', aggregates=[agg]),
              fakes.host_state('h2', aggregates=[agg]),
              fakes.host_state('h3')]
    calls = []

    def decide(aggregates):
        calls.append(aggregates)
        return len(aggregates)
    limits = aggregate_metadata.per_row(fakes.table(states, [agg]), decide,
                                        np.int64)
    assert list(limits) == [1, 1, 0]
    assert len(calls) == 2
