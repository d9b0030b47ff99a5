import pytest

from scheduler import host_cache
from scheduler.objects import request_spec
from scheduler.weights import image_props
from tests.unit.scheduler import fakes

LINUX_PC = {'os_distro': 'linux', 'hw_machine_type': 'pc'}
LINUX_Q35 = {'os_distro': 'linux', 'hw_machine_type': 'q35'}
WINDOWS_PC = {'os_distro': 'windows', 'hw_machine_type': 'pc'}


def _host(name, *images):
    state = fakes.host_state(name)
    state.instances = {
        '%s-%d' % (name, number): host_cache.InstanceInfo('f', props)
        for number, props in enumerate(images)}
    return state


def _hosts():
    return [_host('h1'), _host('h2', WINDOWS_PC),
            _host('h3', LINUX_PC, LINUX_Q35), _host('h4', LINUX_Q35)]


def _spec(properties):
    return fakes.spec(image=request_spec.ImageMeta(properties=properties))


@pytest.fixture
def enabled(config):
    config.config(image_props_weight_multiplier=1.0,
                  group='filter_scheduler')
    return config


def test_off_by_default():
    weigher = image_props.ImagePropertiesWeigher()
    assert fakes.raw_weights(weigher, _hosts(), _spec(LINUX_PC)) == [0.0] * 4


def test_every_matching_property_of_every_instance_counts(enabled):
    weigher = image_props.ImagePropertiesWeigher()
    # h2: pc; h3: linux+pc, linux; h4: linux.
    assert fakes.raw_weights(weigher, _hosts(), _spec(LINUX_PC)) == [
        0.0, 1.0, 3.0, 1.0]
    totals = fakes.weigh([weigher], _hosts(), _spec(LINUX_PC))
    assert totals == pytest.approx([0.0, 1 / 3, 1.0, 1 / 3])


def test_setting_weighs_properties_and_drops_the_others(enabled):
    enabled.config(image_props_weight_setting=['os_distro=1',
                                               'hw_machine_type=0'],
                   group='filter_scheduler')
    weigher = image_props.ImagePropertiesWeigher()
    assert fakes.raw_weights(weigher, _hosts(), _spec(LINUX_PC)) == [
        0.0, 0.0, 2.0, 1.0]
    enabled.config(image_props_weight_setting=['os_distro=10',
                                               'hw_machine_type=1'],
                   group='filter_scheduler')
    assert fakes.raw_weights(weigher, _hosts(), _spec(WINDOWS_PC)) == [
        0.0, 11.0, 1.0, 0.0]


def test_negative_multiplier_spreads(enabled):
    enabled.config(image_props_weight_multiplier=-1.0,
                   group='filter_scheduler')
    totals = fakes.weigh([image_props.ImagePropertiesWeigher()], _hosts(),
                         _spec(LINUX_PC))
    assert max(range(4), key=totals.__getitem__) == 0


def test_values_compare_as_strings(enabled):
    states = [_host('a', {'hw_numa_nodes': 2}), _host('b')]
    assert fakes.raw_weights(image_props.ImagePropertiesWeigher(), states,
                             _spec({'hw_numa_nodes': '2'})) == [1.0, 0.0]


def test_request_without_image(enabled):
    assert fakes.raw_weights(image_props.ImagePropertiesWeigher(),
                             _hosts(), fakes.spec()) == [0.0] * 4


def test_aggregate_override_of_the_multiplier(enabled):
    agg = fakes.aggregate('spread', ['h3'], image_props_weight_multiplier='-2')
    states = _hosts()
    states[2] = _host('h3', LINUX_PC)
    states[2].aggregates = (agg,)
    weigher = image_props.ImagePropertiesWeigher()
    assert weigher.weight_multiplier(states[2]) == -2.0
    assert weigher.weight_multiplier(states[0]) == 1.0


def test_images_are_read_as_nova_reads_them(enabled):
    """Nova compares the image-meta model of both images: ``architecture=
    AMD64`` is ``hw_architecture=x86_64``, ``yes``, ``true`` and ``1`` are
    all ``True``, and ``foo`` is no image property, so it never counts.
    a: x86_64 once (foo twice, not counted) = 1; b: x86_64 + True, then
    True = 3; c: aarch64 and False match nothing = 0."""
    states = [
        _host('a', {'hw_architecture': 'x86_64', 'foo': 'bar'},
              {'foo': 'bar'}),
        _host('b', {'architecture': 'amd64', 'hw_qemu_guest_agent': 'true'},
              {'hw_qemu_guest_agent': '1'}),
        _host('c', {'foo': 'bar'},
              {'hw_architecture': 'aarch64', 'hw_qemu_guest_agent': 'no'})]
    spec = _spec({'architecture': 'AMD64', 'hw_qemu_guest_agent': 'yes',
                  'foo': 'bar'})
    assert fakes.raw_weights(image_props.ImagePropertiesWeigher(), states,
                             spec) == [1.0, 3.0, 0.0]


def test_setting_names_the_current_property(enabled):
    """The setting weighs Nova's field names: ``os_distro=5`` weighs a
    legacy ``vmware_ostype`` too, since Nova reads it as ``os_distro``."""
    enabled.config(image_props_weight_setting=['os_distro=5'],
                   group='filter_scheduler')
    states = [_host('a', {'vmware_ostype': 'windows'}),
              _host('b', {'os_distro': 'windows'}, {'os_distro': 'linux'})]
    assert fakes.raw_weights(image_props.ImagePropertiesWeigher(), states,
                             _spec({'vmware_ostype': 'windows'})) == [
        5.0, 5.0]
