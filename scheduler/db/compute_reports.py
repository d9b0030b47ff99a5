"""What each compute last said it runs (``compute_reports``).

Every instance sync (conductor API ``sync_instances``) replaces its
host's row: the instances that run there (``{uuid: node}``) and those
whose spawn is still under way. Nothing decides from these rows; they are
the compute's word, kept so that ``gantt-manage db check`` can hold the
instances' records against it.

Example::

    with db_api.writer() as session:
        compute_reports.record(session, 'cmp1', {uuid: 'cmp1'}, [])
    with db_api.reader() as session:
        report = compute_reports.get_all(session)['cmp1']
        report.running     # {uuid: 'cmp1'}
"""

import sqlalchemy as sa

from scheduler.db import models

_REPORT = models.ComputeReport.__table__


def record(session, host, running, spawning):
    """Replace ``host``'s report with ``running`` ({uuid: node}) and
    ``spawning`` (uuids), stamped now."""
    values = {'reported_at': models.utcnow(), 'running': dict(running),
              'spawning': sorted(spawning)}
    updated = session.execute(
        sa.update(_REPORT).where(_REPORT.c.host == host).values(**values))
    if updated.rowcount == 0:
        session.execute(sa.insert(_REPORT).values(host=host, **values))


def get_all(session):
    """Every host's last report: ``{host: row}``."""
    return {row.host: row for row in session.execute(sa.select(_REPORT))}


def forget(session, host):
    """Drop ``host``'s report (the host was deleted)."""
    session.execute(sa.delete(_REPORT).where(_REPORT.c.host == host))
