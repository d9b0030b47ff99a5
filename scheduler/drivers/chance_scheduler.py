"""ChanceScheduler: a random host whose compute service is up.

No filter or weigher runs. Candidates are the mapped compute nodes whose
``gantt-compute`` service is up, minus the request's ``ignore_hosts``.
Each instance goes to a random candidate, distinct from the other
instances of the request while there are enough candidates. Unlike Nova's
chance scheduler it still claims in SQL: a host that the cache knows to be
full is not tried, and a lost claim race moves on to another random host::

    [scheduler]
    driver = chance_scheduler

NoValidHost keeps Nova's reasons: "Is the appropriate service running?"
when no compute service is up, "Could not find another compute" when
``ignore_hosts`` removed every candidate.
"""

import random

from oslo_log import log as logging
import numpy as np

from scheduler import conf
from scheduler.drivers import base
from scheduler import exception

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class ChanceScheduler(base.Scheduler):
    """Random placement among the hosts that are up."""

    def _candidates(self, table, spec):
        up = table.candidates & table.service_up()
        if not up.any():
            raise exception.NoValidHost(
                reason='Is the appropriate service running?')
        ignore_hosts = spec.obj_get('ignore_hosts') or []
        if ignore_hosts:
            up &= ~table.hosts_mask(ignore_hosts, ignore_case=False)
        rows = [int(row) for row in np.flatnonzero(up)]
        if not rows:
            raise exception.NoValidHost(
                reason='Could not find another compute')
        return rows

    def select_destinations(self, context, spec, instance_uuids=None,
                            return_alternates=False, validated=False):
        if not validated:
            spec.validate()
        self.count('requests')
        table = self.host_manager.snapshot()
        try:
            rows = self._candidates(table, spec)
            chosen = self._place(table, spec, rows, instance_uuids,
                                 base.consumer_owner(context, spec))
        except exception.NoValidHost:
            self.count('no_valid_host')
            raise
        resources = spec.resources()
        claimed = bool(instance_uuids) and not spec.obj_get('is_rebuild')
        num_alts = CONF.scheduler.max_attempts - 1 if return_alternates else 0
        answer = []
        for row in chosen:
            others = [other for other in rows if other != row]
            alternates = random.sample(others, min(num_alts, len(others)))
            answer.append(
                [base.make_selection(table.states[row], resources, claimed)]
                + [base.make_selection(table.states[alt], resources, False)
                   for alt in alternates])
        self.count('instances', len(chosen))
        return answer

    def _place(self, table, spec, rows, instance_uuids, owner=None):
        """Rows chosen for each instance, claiming when there are uuids."""
        uuids = list(instance_uuids or [])
        count = len(uuids) or spec.num_instances
        resources = spec.resources()
        claiming = bool(uuids) and not spec.obj_get('is_rebuild')
        chosen, claimed = [], []
        try:
            for index in range(count):
                # Prefer hosts no other instance of the request got.
                taken = set(chosen)
                fresh = [row for row in rows if row not in taken]
                random.shuffle(fresh)
                used = [row for row in rows if row in taken]
                random.shuffle(used)
                row = (self._claim_any(table, fresh + used, uuids[index],
                                       resources, claimed, owner)
                       if claiming else (fresh + used)[0])
                if row is None:
                    raise exception.NoValidHost(
                        reason='None of the %d compute host(s) that are up '
                               'has room for the instance' % len(rows))
                chosen.append(row)
                table = table.consumed(row, resources)
        except Exception:
            self.release(claimed)
            raise
        return chosen

    def _claim_any(self, table, order, uuid, resources, claimed,
                   owner=None):
        for row in order:
            state = table.states[row]
            if not all(state.fits(name, getattr(resources, name))
                       for name in resources._fields):
                continue
            if self.claim(state, uuid, resources, owner=owner):
                claimed.append((uuid, state.id))
                return row
        return None
