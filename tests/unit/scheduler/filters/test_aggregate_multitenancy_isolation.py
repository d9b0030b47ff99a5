import pytest

from scheduler.filters import aggregate_multitenancy_isolation as ami
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return ami.AggregateMultiTenancyIsolation()


def _cloud():
    acme = fakes.aggregate('acme', ['a'], filter_tenant_id='p1, p2',
                           filter_tenant_id_more='p3')
    other = fakes.aggregate('other', ['b'], ssd='true')
    states = [fakes.host_state('a', aggregates=[acme]),
              fakes.host_state('b', aggregates=[other]),
              fakes.host_state('c')]
    return states, [acme, other]


@pytest.mark.parametrize('project, expected', [
    ('p1', [True, True, True]), ('p2', [True, True, True]),
    ('p3', [True, True, True]), ('p4', [False, True, True]),
    (None, [False, True, True])])
def test_projects_of_all_filter_tenant_id_keys(filt, project, expected):
    states, aggs = _cloud()
    assert fakes.passes(filt, states, fakes.spec(project_id=project),
                        aggs) == expected


def test_flags_as_nova():
    assert ami.AggregateMultiTenancyIsolation.RUN_ON_REBUILD is False
    assert ami.AggregateMultiTenancyIsolation.run_filter_once_per_request
