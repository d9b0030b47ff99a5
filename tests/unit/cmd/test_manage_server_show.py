"""gantt-manage server show: a table (JSON documents as ``key: value``
lines), or one JSON object with ``--format json``; in-process, SQLite."""

import datetime
import json
import re

from oslo_utils import uuidutils

from scheduler.cmd import manage_table
from scheduler.db import api as db_api
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler.objects import request_spec

UUID = uuidutils.generate_uuid()
FLAVOR = {'name': 'm1.small', 'vcpus': 2, 'memory_mb': 2048, 'root_gb': 20}


def _add_server():
    spec = request_spec.RequestSpec(
        num_instances=1, project_id='p1',
        flavor=request_spec.Flavor(name='m1.small', vcpus=2, memory_mb=2048,
                                   root_gb=20),
        scheduler_hints={'group': ['g1']}).obj_to_primitive()
    with db_api.writer() as session:
        db_instances.create(session, UUID, FLAVOR, spec, project_id='p1',
                            display_name='web-1')
        db_instances.update(session, UUID, host='compute1', node='compute1',
                            vm_state=db_instances.ACTIVE, task_state=None)
    return spec


def _fields(out):
    """``{field: [value lines]}`` of the Field/Value table."""
    fields = {}
    name = None
    for line in out.splitlines()[2:]:
        if line.startswith(' '):
            fields[name].append(line.strip())
        else:
            name, value = (re.split(r'\s{2,}', line, maxsplit=1) + [''])[:2]
            fields[name] = [value]
    return fields


def test_show_is_a_table_with_documents_as_lines(database, run):
    _add_server()

    result = run('server', 'show', UUID)

    assert result.code == 0, result.err
    assert result.out.splitlines()[0].split() == ['Field', 'Value']
    fields = _fields(result.out)
    assert set(fields) == {column.name
                           for column in models.Instance.__table__.columns}
    assert fields['flavor'] == ['memory_mb: 2048', 'name: m1.small',
                                'root_gb: 20', 'vcpus: 2']
    spec = fields['request_spec']
    # The request spec's fields, not its serialization.
    assert 'flavor.vcpus: 2' in spec
    assert 'num_instances: 1' in spec
    assert 'scheduler_hints.group: ["g1"]' in spec
    assert not any('gantt_object' in line for line in spec)
    assert fields['host'] == ['compute1']
    assert fields['fault'] == ['-']
    assert '{"' not in result.out


def test_show_format_json_is_one_object_of_every_field(database, run):
    spec = _add_server()

    result = run('server', 'show', UUID, '--format', 'json')

    assert result.code == 0, result.err
    shown = json.loads(result.out)
    assert set(shown) == {column.name
                          for column in models.Instance.__table__.columns}
    assert shown['request_spec'] == spec
    assert shown['flavor'] == FLAVOR
    assert (shown['uuid'], shown['vm_state'], shown['fault']) == (
        UUID, 'active', None)
    assert datetime.datetime.fromisoformat(shown['created_at'])
    table = run('server', 'show', UUID, '--format', 'table')
    assert table.out == run('server', 'show', UUID).out


def test_show_bad_format_and_unknown_server(database, run):
    bad = run('server', 'show', UUID, '--format', 'yaml')
    assert bad.code == 2
    assert "invalid choice: 'yaml'" in bad.err
    missing = run('server', 'show', UUID, '--format', 'json')
    assert (missing.code, missing.out) == (1, '')
    assert 'could not be found' in missing.err


def test_document_lines():
    assert manage_table.document_lines({'b': {'c': None, 'a': [1]},
                                        'e': {}}) == \
        ['b.a: [1]', 'b.c: null', 'e: {}']
    assert manage_table.document_lines([{'x': 1}, {'x': 2}]) == \
        ['0.x: 1', '1.x: 2']
    assert manage_table.document_lines('plain') == ['plain']
