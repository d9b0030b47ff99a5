"""GanttObject.obj_get: a field's value, else the default."""

import pytest

from scheduler.objects import request_spec


def test_obj_get_reads_set_fields_and_defaults_the_rest():
    flavor = request_spec.Flavor(vcpus=2, memory_mb=512, root_gb=1,
                                 extra_specs={'a': 'b'})
    assert flavor.obj_get('extra_specs') == {'a': 'b'}
    assert flavor.obj_get('vcpus') == 2

    spec = request_spec.RequestSpec()
    # Unset: the default.
    assert spec.obj_get('flavor', 'none') == 'none'
    spec.flavor = flavor
    assert spec.obj_get('flavor') is flavor
    # Set to None: the default too.
    destination = request_spec.Destination(host=None)
    assert destination.obj_get('host', 'any') == 'any'
    destination.host = 'compute1'
    assert destination.obj_get('host', 'any') == 'compute1'


def test_obj_get_refuses_what_is_no_field():
    with pytest.raises(AttributeError):
        request_spec.RequestSpec().obj_get('no_such_field')
