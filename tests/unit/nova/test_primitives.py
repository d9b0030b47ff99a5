"""scheduler.nova.primitives: tolerant reading, clear refusals."""

import pytest

from scheduler import exception
from scheduler.nova import primitives


def _flavor(**changes):
    primitive = {'nova_object.name': 'Flavor',
                 'nova_object.namespace': 'nova',
                 'nova_object.version': '1.2',
                 'nova_object.data': {'vcpus': 1, 'memory_mb': 512},
                 'nova_object.changes': ['vcpus']}
    primitive.update(changes)
    return primitive


def test_decodes_nested_objects_lists_and_dicts():
    decoded = primitives.decode({'spec': [_flavor()], 'n': 1}, 'args')
    flavor = decoded['spec'][0]
    assert (flavor.name, flavor.version, flavor.field) == (
        'Flavor', (1, 2), "args['spec'][0]")
    assert flavor.get('vcpus') == 1
    assert decoded['n'] == 1


def test_tolerates_newer_minor_versions_unknown_fields_and_objects():
    flavor = primitives.decode(_flavor(**{
        'nova_object.version': '1.9',
        'nova_object.data': {'vcpus': 1, 'new_field': [1]}}), 'flavor')
    assert flavor.version == (1, 9) and flavor.get('new_field') == [1]
    other = primitives.decode(_flavor(**{'nova_object.name': 'Novel',
                                         'nova_object.version': '7.0'}),
                              'x')
    assert other.name == 'Novel'


@pytest.mark.parametrize('primitive, words', [
    (_flavor(**{'nova_object.namespace': 'gantt'}),
     "flavor is not a Nova object (namespace 'gantt', expected 'nova')"),
    ({'gantt_object.name': 'Flavor', 'gantt_object.data': {}},
     'flavor is not a Nova object (a gantt_object primitive)'),
    (_flavor(**{'nova_object.version': '2.0'}),
     'flavor (Flavor) has version 2.0; Gantt reads Flavor 1.x'),
    (_flavor(**{'nova_object.version': 1.2}),
     'flavor (Flavor) has a malformed version 1.2'),
    (_flavor(**{'nova_object.name': 'Bad name'}),
     "flavor has a malformed object name 'Bad name'"),
    (_flavor(**{'nova_object.data': None}),
     'flavor (Flavor) has no data dict'),
    (_flavor(**{'nova_object.extra': 1}),
     "flavor (Flavor) has unknown keys ['nova_object.extra']"),
    (_flavor(**{'nova_object.data': {'vcpus': object()}}),
     'flavor.vcpus holds a object, not JSON data'),
])
def test_refusals_name_the_field(primitive, words):
    with pytest.raises(exception.InvalidRequest) as info:
        primitives.decode(primitive, 'flavor')
    assert words in str(info.value)


def test_refuses_deep_nesting():
    value = []
    for _ in range(primitives.MAX_DEPTH + 2):
        value = [value]
    with pytest.raises(exception.InvalidRequest) as info:
        primitives.decode(value, 'deep')
    assert 'nests deeper than' in str(info.value)


def test_encode_is_what_decode_reads():
    primitive = primitives.encode('SchedulerLimits', '1.0', {'vcpu': 2})
    assert primitive['nova_object.changes'] == ['vcpu']
    decoded = primitives.decode(primitive, 'limits')
    assert (decoded.name, decoded.version, decoded.data) == (
        'SchedulerLimits', (1, 0), {'vcpu': 2})
