import pytest

from scheduler.filters import isolated_hosts_filter
from scheduler.objects import request_spec
from tests.unit.scheduler import fakes

ISOLATED = 'f3b2a9f6-7c6e-4d2f-8a0b-0d6f0c9e1a11'
OTHER = '9a1c3e0d-2b4f-4a6e-8c1d-3e5f7a9b1c2d'


@pytest.fixture
def filt():
    return isolated_hosts_filter.IsolatedHostsFilter()


def _states():
    return [fakes.host_state('iso'), fakes.host_state('plain'),
            fakes.host_state('ISO')]


def _spec(image_id):
    if image_id is None:
        return fakes.spec()
    return fakes.spec(image=request_spec.ImageMeta(id=image_id))


@pytest.mark.parametrize('restrict, image, expected', [
    (True, ISOLATED, [True, False, False]),
    (True, OTHER, [False, True, True]),
    (True, None, [False, True, True]),
    (False, ISOLATED, [True, False, False]),
    (False, OTHER, [True, True, True]),
])
def test_matrix(filt, config, restrict, image, expected):
    config.config(isolated_images=[ISOLATED], isolated_hosts=['iso'],
                  restrict_isolated_hosts_to_isolated_images=restrict,
                  group='filter_scheduler')
    assert fakes.passes(filt, _states(), _spec(image)) == expected


@pytest.mark.parametrize('restrict, expected', [
    (True, [False, True, True]), (False, [True, True, True])])
def test_no_isolated_images(filt, config, restrict, expected):
    config.config(isolated_hosts=['iso'],
                  restrict_isolated_hosts_to_isolated_images=restrict,
                  group='filter_scheduler')
    assert fakes.passes(filt, _states(), _spec(OTHER)) == expected


def test_defaults_pass_everything(filt):
    assert fakes.passes(filt, _states(), _spec(ISOLATED)) == [True] * 3


def test_flags_as_nova():
    cls = isolated_hosts_filter.IsolatedHostsFilter
    assert cls.RUN_ON_REBUILD is True
    assert cls.run_filter_once_per_request is True
