"""gantt-manage db check: is every database consistent?

Without ``[api_database] connection`` it checks ``[database]``; with it,
every cell mapping's database (disabled cells too) and then the API
database. In each cell other than cell0:

* usage against allocations and capacity, node by node
  (:func:`scheduler.db.claim_checks.find_inconsistent_nodes`);
* stray claims, each named by its kind
  (:func:`scheduler.db.claim_checks.find_stray_allocations`);
* the instances against their computes' last reports: ACTIVE but not
  running on its compute, running on a compute that does not host it
  (:mod:`scheduler.db.report_checks`); hosts of ACTIVE instances that
  never reported are named in a note, not held against anything.

In cell0, its instances: none may have a host or hold a claim. In the
API database, its mappings, build requests and server group members
against the cells' rows (:mod:`scheduler.db.api_checks`).

The output is one line per cell (and the API database), ``ok: ...`` first
when all is well, then a table per kind of problem with a count per
kind; with cells, each problem names its cell. A cell whose database
cannot be used is named on stderr (password masked) and the others are
still checked. Exit 1 if anything is wrong or a cell could not be
checked::

    $ gantt-manage db check
    ok: 3 cell(s) and the API database are consistent.
      cell0: ok: 2 instance(s), none with a host or a claim.
      cell1: ok: 4 compute node(s), usage matches allocations and
        capacity; no instance at odds with its compute's last report.
      API database: ok: 12 instance mapping(s), 0 build request(s).

``gantt-status upgrade check`` reads the same :func:`run_checks`.
"""

import collections
import dataclasses
import datetime
import sys

from oslo_db import exception as db_exc
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler import cells
from scheduler.cmd import manage_table
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import api_checks
from scheduler.db import claim_checks
from scheduler.db import migration
from scheduler.db import models
from scheduler.db import report_checks
from scheduler import exception

CONF = conf.CONF
PROG = 'gantt-manage'

_ERRORS = (sa_exc.SQLAlchemyError, db_exc.DBError, exception.GanttException)


@dataclasses.dataclass
class CellCheck:
    """What was found in one cell's database; ``error`` says why it
    could not be checked (None: it was)."""

    cell: cells.CellMapping
    error: str | None = None
    node_count: int = 0
    instance_count: int = 0
    bad_nodes: list = dataclasses.field(default_factory=list)
    stray: list = dataclasses.field(default_factory=list)
    instances: list = dataclasses.field(default_factory=list)
    unreported_hosts: list = dataclasses.field(default_factory=list)
    instance_uuids: set = dataclasses.field(default_factory=set)

    def problem_count(self):
        return len(self.bad_nodes) + len(self.stray) + len(self.instances)


@dataclasses.dataclass
class Outcome:
    """Every cell's :class:`CellCheck`; the API database's findings
    (None without ``[api_database]``) and what it holds."""

    cells: list
    api: list | None = None
    api_mappings: int = 0
    api_build_requests: int = 0

    def failed(self):
        return bool(self.api) or any(check.error or check.problem_count()
                                     for check in self.cells)


def _count(session, model):
    return session.execute(sa.select(sa.func.count()).select_from(
        model.__table__)).scalar_one()


def _read_cell(check, session, with_uuids):
    if check.cell.is_cell0:
        check.instances = report_checks.find_cell0_problems(session)
    else:
        check.bad_nodes = claim_checks.find_inconsistent_nodes(session)
        check.stray = claim_checks.find_stray_allocations(session)
        reports = report_checks.find_report_problems(session)
        check.instances = reports.findings
        check.unreported_hosts = reports.unreported_hosts
        check.node_count = _count(session, models.ComputeNode)
    check.instance_count = _count(session, models.Instance)
    if with_uuids:
        instance = models.Instance.__table__
        check.instance_uuids = set(
            session.execute(sa.select(instance.c.uuid)).scalars())


def check_cell(cell, with_uuids=False):
    """The :class:`CellCheck` of ``cell`` (``with_uuids``: keep the uuids
    of its instance rows, for the API database's checks)."""
    check = CellCheck(cell)
    with cells.target(cell):
        url = db_api.targeted_connection()
        try:
            current, head = migration.db_version(), migration.head_version()
            if current != head:
                raise exception.DatabaseNotSynced(
                    url=config.redact_database_url(url), current=current,
                    expected=head)
            with db_api.reader() as session:
                _read_cell(check, session, with_uuids)
        except _ERRORS as error:
            reason = (str(error) if isinstance(error, exception.GanttException)
                      else db_api.describe_error(error))
            check.error = 'cannot use the database at %s: %s' % (
                config.redact_database_url(url),
                config.scrub(reason, [url]))
    return check


def run_checks():
    """Check every cell (and the API database, with cells); an
    :class:`Outcome`.

    :raises: DatabaseUnavailable, DatabaseNotSynced (of ``[database]``
        in one cell), ApiDatabaseUnavailable, ApiDatabaseNotSynced
    """
    if not db_api.api_database_configured():
        migration.check_schema()
        return Outcome([check_cell(cells.LOCAL)])
    migration.check_schema(database='api')
    cells.clear_cache()
    # The API database before the cells' rows: see
    # scheduler.db.api_checks.
    with db_api.api_reader() as session:
        state = api_checks.read_api(session)
    checks = [check_cell(cell, with_uuids=True)
              for cell in cells.get_cells()]
    cutoff = models.utcnow() - datetime.timedelta(
        seconds=CONF.conductor.build_request_grace_period)
    api = api_checks.find_api_problems(
        state, {check.cell.uuid: check.instance_uuids for check in checks
                if check.error is None},
        {check.cell.uuid for check in checks if check.error}, cutoff)
    return Outcome(checks, api, len(state.instance_mappings),
                   len(state.build_requests))


def _cell_summary(check):
    if check.error:
        return 'not checked: %s' % check.error
    if check.problem_count():
        return '%d problem(s), listed below.' % check.problem_count()
    if check.cell.is_cell0:
        return ('ok: %d instance(s), none with a host or a claim.'
                % check.instance_count)
    return ('ok: %d compute node(s), usage matches allocations and '
            'capacity; no instance at odds with its compute\'s last report.'
            % check.node_count)


def _summaries(outcome):
    """The lines that sum each cell (and the API database) up."""
    if outcome.api is None:
        [check] = outcome.cells
        return [_cell_summary(check)]
    lines = ['%s: %s' % (check.cell.label(), _cell_summary(check))
             for check in outcome.cells]
    if outcome.api:
        lines.append('API database: %d problem(s), listed below.'
                     % len(outcome.api))
    else:
        lines.append('API database: ok: %d instance mapping(s), %d build '
                     'request(s).' % (outcome.api_mappings,
                                      outcome.api_build_requests))
    if outcome.failed():
        return lines
    return ['ok: %d cell(s) and the API database are consistent.'
            % len(outcome.cells)] + ['  ' + line for line in lines]


# A table of the output: its rows, the line under it, and which column
# (if any) says each row's kind, counted per kind under the line.
_Table = collections.namedtuple('_Table', 'headers rows footer kind_column')


def _node_table(outcome, cell_column):
    found = [(check, node, problems) for check in outcome.cells
             for node, problems in check.bad_nodes]
    if not found:
        return None
    return _Table(
        ['Host', 'Node'] + cell_column.header + ['UUID', 'Problems'],
        [[node.host, node.hypervisor_hostname] + cell_column.of(check)
         + [node.uuid, '\n'.join(problems)]
         for check, node, problems in found],
        '%d of %d compute node(s) inconsistent.' % (
            len(found), sum(check.node_count for check in outcome.cells)),
        None)


def _stray_table(outcome, cell_column):
    found = [(check, row) for check in outcome.cells for row in check.stray]
    if not found:
        return None
    return _Table(
        ['Consumer'] + cell_column.header
        + ['Host', 'Node', 'Why it should hold nothing'],
        [[row.consumer_uuid] + cell_column.of(check)
         + [row.host, row.node, row.why] for check, row in found],
        '%d allocation(s) held by consumers that should hold none.'
        % len(found), -1)


def _instance_table(outcome, cell_column):
    found = [(check, row) for check in outcome.cells
             for row in check.instances]
    if not found:
        return None
    return _Table(
        ['Instance'] + cell_column.header + ['Host', 'Problem', 'Detail'],
        [[row.instance_uuid] + cell_column.of(check)
         + [row.host, row.why, row.detail] for check, row in found],
        '%d instance(s) that disagree with their compute or their cell.'
        % len(found), -2)


def _api_table(outcome, cell_column):
    if not outcome.api:
        return None
    return _Table(['Instance', 'Cell', 'Problem', 'Detail'],
                  [list(row) for row in outcome.api],
                  '%d problem(s) in the API database.' % len(outcome.api),
                  -2)


class _CellColumn:
    """The Cell column, present only with cells."""

    def __init__(self, with_cells):
        self.header = ['Cell'] if with_cells else []
        self._with_cells = with_cells

    def of(self, check):
        return [check.cell.label()] if self._with_cells else []


def _print_tables(outcome):
    cell_column = _CellColumn(outcome.api is not None)
    for build in (_node_table, _stray_table, _instance_table, _api_table):
        table = build(outcome, cell_column)
        if table is None:
            continue
        print()
        print(manage_table.format_table(table.headers, table.rows))
        print('\n' + table.footer)
        if table.kind_column is None:
            continue
        kinds = collections.Counter(row[table.kind_column]
                                    for row in table.rows)
        for kind, count in sorted(kinds.items(),
                                  key=lambda item: _KIND_ORDER.get(item[0])):
            print('  %d %s' % (count, kind))


# Kinds are counted in the order their modules list them.
_KIND_ORDER = {kind: index for index, kind in enumerate(
    claim_checks.STRAY_KINDS + report_checks.KINDS + api_checks.KINDS)}


def _print_notes(outcome):
    for check in outcome.cells:
        if check.unreported_hosts:
            where = (' in cell %s' % check.cell.label()
                     if outcome.api is not None else '')
            print('note: %d host(s)%s with ACTIVE instances never reported '
                  'which instances they run (not checked): %s'
                  % (len(check.unreported_hosts), where,
                     ', '.join(check.unreported_hosts)))


def check():
    """``gantt-manage db check``: print what :func:`run_checks` found;
    exit 1 if anything is wrong or a cell could not be checked."""
    outcome = run_checks()
    for check_ in outcome.cells:
        if check_.error:
            sys.stderr.write('%s: error: cell %s was not checked: %s\n'
                             % (PROG, check_.cell.label(), check_.error))
    for line in _summaries(outcome):
        print(line)
    _print_notes(outcome)
    _print_tables(outcome)
    return 1 if outcome.failed() else 0
