"""``gantt-manage explain``: why a request would land where, or nowhere.

It takes the arguments of ``server create``, builds the same RequestSpec
(with the ``group`` hint's server group as the conductor would send it,
joining nothing), loads the hosts from the database as a scheduler does,
and runs the filter scheduler's own code over them without claiming
anything. For each instance of the request it prints the hosts each
filter removed and the filter's reason (and what a filter notes about the
request as a whole, such as a JsonFilter query's unknown variables), then
the ranking of the hosts left with each weigher's part of their weight::

    gantt-manage explain --vcpus 2 --ram 4096 --disk 20 --count 2 \\
        --hint group=<uuid> --az az1

With cells (``[api_database] connection``), the Removed and Ranking
tables have a Cell column, as ``host list`` does, and each instance ends
with the hosts that passed every filter in each cell::

    Passing hosts per cell: cell1 2, cell2 0

It uses this configuration's filters, weighers and multipliers
(``[filter_scheduler]``), whatever ``[scheduler] driver`` says. Exit code 0
if every instance would find a host, 1 if not (the NoValidHost message is
printed last).
"""

from conductor.tasks import build
from scheduler.cmd import manage_server
from scheduler.cmd import manage_table
from scheduler import conf
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.drivers import filter_scheduler
from scheduler import loadables

CONF = conf.CONF


def _number(value):
    # + 0.0 turns -0.0 into 0.0.
    return '%.4f' % (value + 0.0)


def _cell_column(with_cells, cell):
    return [cell] if with_cells else []


def _print_instance(instance, count, with_cells=False):
    if count > 1:
        print('Instance %d of %d' % (instance.index + 1, count))
        print('=' * len('Instance %d of %d' % (instance.index + 1, count)))
    print(manage_table.format_table(
        ['Step', 'Hosts before', 'Hosts after'],
        [[step.name, step.before, step.after] for step in instance.steps]))
    notes = [[step.name, note] for step in instance.steps
             for note in step.notes]
    if notes:
        print('\nNotes:')
        print(manage_table.format_table(['Filter', 'Note'], notes))
    removed = [[step.name, item.host, item.node]
               + _cell_column(with_cells, item.cell) + [item.reason]
               for step in instance.steps for item in step.removed or ()]
    if removed:
        print('\nRemoved:')
        print(manage_table.format_table(
            ['Filter', 'Host', 'Node'] + _cell_column(with_cells, 'Cell')
            + ['Reason'], removed))
    if instance.ranking:
        names = [name for name, _value in instance.ranking[0].parts]
        print('\nRanking (weight = sum of each weigher\'s multiplier x '
              'normalized weight):')
        print(manage_table.format_table(
            ['Rank', 'Host', 'Node'] + _cell_column(with_cells, 'Cell')
            + ['Weight'] + names,
            [[rank, entry.host, entry.node]
             + _cell_column(with_cells, entry.cell)
             + [_number(entry.weight)]
             + [_number(value) for _name, value in entry.parts]
             for rank, entry in enumerate(instance.ranking, 1)]))
    if with_cells and instance.passing is not None:
        print('\nPassing hosts per cell: %s' % (', '.join(
            '%s %d' % item for item in instance.passing.items()) or 'none'))
    if instance.chosen:
        print('\nChosen: %s (node %s)' % instance.chosen)
    print()


def explain(vcpus, ram, disk, count, az, hints, project, extra_specs=(),
            image=None, image_properties=()):
    migration.check_schema()
    if db_api.api_database_configured():
        # The server group and the aggregates are read there.
        migration.check_schema(database='api')
    spec = manage_server.build_request_spec(
        vcpus, ram, disk, count, az, hints, project, [], extra_specs, image,
        image_properties)
    build.load_group(spec)
    if CONF.scheduler.driver not in ('filter_scheduler',
                                     'caching_scheduler'):
        print('Note: [scheduler] driver is %s; this is what the filter '
              'scheduler would do.\n' % CONF.scheduler.driver)
    manager_cls = loadables.load_host_manager(CONF.scheduler.host_manager)
    driver = filter_scheduler.FilterScheduler(
        host_manager=manager_cls(auto_refresh=False))
    try:
        explanation = driver.explain(gantt_context.get_admin_context(), spec)
    finally:
        driver.stop()
    print('%d candidate host(s) (mapped nodes with a compute service).\n'
          % explanation.total)
    with_cells = db_api.api_database_configured()
    for instance in explanation.instances:
        _print_instance(instance, count, with_cells)
    if not explanation.placed:
        print(explanation.error)
        return 1
    return 0
