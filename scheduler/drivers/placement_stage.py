"""The placement stage: a request's resource classes, traits and
aggregates, answered over the host table before the filters run.

Nova 34 decides in two steps: Placement's allocation candidates, then
the filters. Gantt answers the first step in its own host table
(:attr:`scheduler.host_cache.HostTable.placement`, one root provider per
row), in the same pass as the other restrictions::

    plan = placement_stage.Plan(spec, table.aggregates)
    mask, steps = plan.cut(table, mask, steps)
    resources, extra = plan.amounts(table, row)   # what a claim takes

The request is what :func:`scheduler.resources.from_spec.resource_request`
makes of the flavor and image, after Nova's request filters
(:mod:`scheduler.resources.request_filters`). A request that asks only
the flavor's VCPU, MEMORY_MB and DISK_GB, with no trait and no
aggregate beyond what the filters check anyway (the compute service's
status, the availability zone), skips the stage: the capacity filters
and the SQL claim answer it as before, for no cost.

A request for dedicated CPUs asks PCPU; as Nova does unless
``[workarounds] disable_fallback_pcpu_query`` is set, hosts that report
no PCPU are asked again with VCPU, and a claim on such a host takes
VCPU.
"""

import copy

import numpy as np

from scheduler.conf import cached
from scheduler import filters
from scheduler.resources import amounts as amounts_mod
from scheduler.resources import from_spec
from scheduler.resources import generated_groups
from scheduler.resources import request as request_mod
from scheduler.resources import request_filters


CLASSIC = amounts_mod.CLASSIC
# The name of the stage's steps in NoValidHost and explain.
RESOURCES_STEP = 'resources'
# What request filters add that the filters check anyway, for a request
# that is otherwise the flavor's sizes.
_ALWAYS = ('compute_status_filter', 'map_az_to_placement_aggregate',
           'max_placement_results')


# Extra spec and image property prefixes that may make a request more
# than the flavor's sizes; a request with none of them, and none of the
# request filters' options on, skips even the parsing.
_SPEC_PREFIXES = ('resources', 'trait', 'group_policy', 'hw:cpu_policy',
                  'hw:cpu_thread_policy', 'hw:emulator_threads_policy',
                  'pci_passthrough:alias')
_IMAGE_PREFIXES = ('trait', 'hw_cpu_policy', 'hw_cpu_thread_policy',
                   'hw_emulator_threads_policy')
_OPTIONS = ('limit_tenants_to_placement_aggregate',
            'enable_isolated_aggregate_filtering',
            'query_placement_for_image_type_support',
            'image_metadata_prefilter')


def _nova_mode():
    """Nova's scheduler asks Placement for every request, even one of a
    flavor's sizes only: in Nova mode the stage always runs (it stands
    for Placement's allocation candidates, and Nova's default filters do
    not check RAM, CPU or disk)."""
    return cached.group('scheduler').backend == 'nova'


def _may_need(spec):
    options = cached.group('scheduler')
    if _nova_mode() or any(getattr(options, name) for name in _OPTIONS):
        return True
    extra_specs = spec.flavor.obj_get('extra_specs', {}) or {}
    if any(key.startswith(_SPEC_PREFIXES) for key in extra_specs):
        return True
    image = spec.obj_get('image')
    properties = (image.obj_get('properties', {}) or {}) if image else {}
    return any(key.startswith(_IMAGE_PREFIXES) for key in properties)


def plan_for(spec, aggregates):
    """The request's :class:`Plan`; one that skips the stage (without
    parsing anything) when nothing in the spec or the options can ask
    more than the flavor's sizes."""
    if not _may_need(spec):
        return no_stage(spec)
    return Plan(spec, aggregates)


def _classic_only(request, spec):
    """Whether ``request`` asks exactly the flavor's sizes of the
    classic classes and nothing else."""
    if request.suffixed or request.root_required:
        return False
    group = request.unsuffixed
    if (group.required_traits or group.forbidden_traits
            or group.forbidden_aggregates):
        return False
    resources = spec.resources()
    expected = {name: getattr(resources, field)
                for name, field in CLASSIC.items()
                if getattr(resources, field)}
    return group.resources == expected


class Plan:
    """What one request asks of the hosts' providers, and which rows
    give it."""

    def __init__(self, spec, aggregates):
        self.spec = spec
        first = from_spec.resource_request(spec)
        self.fallback = None
        # Nova asks again with VCPU only when pinned CPUs are asked.
        if ('PCPU' in first.all_resources()
                and not cached.group('workarounds')
                .disable_fallback_pcpu_query):
            self.fallback = from_spec.resource_request(
                spec, translate_pinning=False)
        # Each request filter's request in turn (explain shows its cut).
        self.stages = [(RESOURCES_STEP, first)]
        request = first
        for request_filter in request_filters.ALL:
            request, note = request_filter(spec, request, aggregates)
            if note is not None:
                self.stages.append((request_filter.__name__, request))
        self.request = request
        if self.fallback is not None:
            self.fallback, _ran = request_filters.apply(
                spec, self.fallback, aggregates)
        self.needed = (
            _nova_mode()
            or self.fallback is not None
            or not _classic_only(first, spec)
            or any(name not in _ALWAYS for name, _ in self.stages[1:]))
        # Rows where the first request (PCPU) fits, from the last cut.
        self._pinned_rows = None

    def copy(self):
        """The same plan (its requests are immutable) without the rows
        of this one's last cut: for a ranking made ahead, which cuts
        while the request that read the spec may still be claiming."""
        other = copy.copy(self)
        other._pinned_rows = None
        return other

    def _accepted(self, providers, request, mask, fallback=None):
        accepted = providers.acceptable_roots(request, candidate_mask=mask)
        if fallback is not None:
            return accepted, accepted | providers.acceptable_roots(
                fallback, candidate_mask=mask)
        return accepted, accepted

    def cut(self, table, mask, steps=None, explain=False):
        """``(mask, steps)``: ``mask`` less the rows that cannot give the
        request, with a :class:`filters.Step` for the stage (with
        ``explain``, one per request filter that added something)."""
        steps = list(steps or [])
        if not self.needed:
            return mask, steps
        providers = table.placement
        if explain:
            stages = self.stages[:-1]
            for name, request in stages:
                fallback = (self.fallback if name == RESOURCES_STEP
                            else None)
                _first, accepted = self._accepted(providers, request, mask,
                                                  fallback)
                mask = _narrow(steps, name, mask, mask & accepted)
            name = self.stages[-1][0]
        else:
            name = RESOURCES_STEP
        pinned, accepted = self._accepted(providers, self.request, mask,
                                          self.fallback)
        self._pinned_rows = pinned
        kept = mask & accepted
        limit = self.request.limit
        if limit is not None and np.count_nonzero(kept) > limit:
            # Placement's limit: the first candidates, in the order of
            # the compute nodes (the table's rows).
            rows = np.flatnonzero(kept)[limit:]
            kept = kept.copy()
            kept[rows] = False
        mask = _narrow(steps, name, mask, kept)
        return mask, steps

    def amounts(self, table, row):
        """``(resources, extra)``: what a claim on ``row`` takes of the
        classic classes (a placement_types.Resources) and of the others
        (``{class: amount}``), but for the PCI devices' groups: the PCI
        claim takes those from the pools."""
        request = self.request
        if (self.fallback is not None and self._pinned_rows is not None
                and not self._pinned_rows[row]):
            request = self.fallback
        resources, extra = amounts_mod.split(
            generated_groups.node_resources(request))
        return resources, extra or {}


def _narrow(steps, name, before, after):
    steps.append(filters.Step(name, int(np.count_nonzero(before)),
                              int(np.count_nonzero(after))))
    return after


def no_stage(spec):
    """A Plan that asks nothing of the stage (for drivers and paths that
    do not run it)."""
    plan = Plan.__new__(Plan)
    plan.spec = spec
    plan.fallback = None
    plan.stages = []
    plan.request = request_mod.ResourceRequest()
    plan.needed = False
    plan._pinned_rows = None
    return plan

