"""Nova's request filters: what a request asks beyond its flavor.

Before the allocation candidates are looked for, Nova's scheduler lets a
list of request filters (its "prefilters") add to the request: aggregates
the host must be in or out of, traits its root provider must have or
lack. Gantt runs the same ones, with Nova's options, on the
:class:`scheduler.resources.request.ResourceRequest` made of the flavor
and image::

    request, ran = request_filters.apply(spec, request, aggregates)
    # ran: [('require_tenant_aggregate', 'member of any of 2 aggregates'),
    #       ('compute_status_filter', 'forbids COMPUTE_STATUS_DISABLED')]

Each filter returns the request it leaves (a new value; the one given is
not changed) and a short note of what it added, or None when it did not
run (its option is off, or the request gives it nothing to do).
``explain`` evaluates the candidates after each, to show each one's cut.

``aggregates`` are :class:`scheduler.placement_types.Aggregate` values,
the host cache's; nothing here reads the database.
"""

import dataclasses

from oslo_log import log as logging
import os_traits

from scheduler import conf
from scheduler import exception
from scheduler import placement_types
from scheduler.resources import request as request_mod

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# Nova's aggregate metadata keys.
TENANT_KEY_PREFIX = 'filter_tenant_id'
TRAIT_KEY_PREFIX = 'trait:'

# Image property -> the prefix of the trait Nova derives from its value.
IMAGE_PROPERTY_TRAITS = (
    ('hw_cdrom_bus', 'COMPUTE_STORAGE_BUS'),
    ('hw_disk_bus', 'COMPUTE_STORAGE_BUS'),
    ('hw_video_model', 'COMPUTE_GRAPHICS_MODEL'),
    ('hw_vif_model', 'COMPUTE_NET_VIF_MODEL'),
    ('hw_architecture', 'HW_ARCH'),
    ('hw_emulation_architecture', 'COMPUTE_ARCH'),
    ('hw_viommu_model', 'COMPUTE_VIOMMU'),
)


def _with_unsuffixed(request, **changes):
    """``request`` whose unsuffixed group has ``changes`` applied."""
    base = request.group(request_mod.UNSUFFIXED)
    if base is None:
        base = request_mod.RequestGroup()
        others = request.groups
    else:
        others = tuple(group for group in request.groups
                       if group.suffix != request_mod.UNSUFFIXED)
    group = dataclasses.replace(base, **changes)
    return dataclasses.replace(request, groups=(group,) + others)


def _require_aggregates(request, uuids):
    """Add an any-of set of aggregates the host must be in."""
    base = request.unsuffixed
    return _with_unsuffixed(
        request, member_of=base.member_of + (frozenset(uuids),))


def _image_properties(spec):
    image = spec.obj_get('image')
    if image is None:
        return {}
    return image.obj_get('properties', {}) or {}


def require_tenant_aggregate(spec, request, aggregates):
    """``[scheduler] limit_tenants_to_placement_aggregate``: a project
    named in some aggregate's ``filter_tenant_id*`` key goes to those
    aggregates only; with ``placement_aggregate_required_for_tenants``, a
    project named in none goes nowhere."""
    if not CONF.scheduler.limit_tenants_to_placement_aggregate:
        return request, None
    project = spec.obj_get('project_id')
    uuids = {aggregate.uuid for aggregate in aggregates
             if any(key.startswith(TENANT_KEY_PREFIX) and value == project
                    for key, value in aggregate.metadata.items())}
    if uuids:
        return (_require_aggregates(request, uuids),
                'member of any of %d aggregate(s) of project %s'
                % (len(uuids), project))
    if CONF.scheduler.placement_aggregate_required_for_tenants:
        LOG.warning('Project %s is in no aggregate (filter_tenant_id) and '
                    '[scheduler] placement_aggregate_required_for_tenants '
                    'is set: no host is available to it', project)
        raise exception.NoValidHost(
            reason='No hosts available for tenant %s: it is in no '
                   'aggregate\'s filter_tenant_id.' % project)
    return request, None


def map_az_to_placement_aggregate(spec, request, aggregates):
    """A requested availability zone: the host is in one of the
    aggregates whose ``availability_zone`` metadata names it. An AZ that
    no aggregate names (the default zone) adds nothing."""
    zone = spec.obj_get('availability_zone')
    if not zone:
        return request, None
    uuids = {aggregate.uuid for aggregate in aggregates
             if aggregate.metadata.get(placement_types.AZ_KEY) == zone}
    if not uuids:
        return request, None
    return (_require_aggregates(request, uuids),
            'member of any of %d aggregate(s) of zone %s'
            % (len(uuids), zone))


def _disk_format(spec):
    image = spec.obj_get('image')
    return None if image is None else image.obj_get('disk_format')


def require_image_type_support(spec, request, aggregates):
    """``[scheduler] query_placement_for_image_type_support``: the root
    provider has ``COMPUTE_IMAGE_TYPE_<disk format>``; not for a server
    booted from volume."""
    if not CONF.scheduler.query_placement_for_image_type_support:
        return request, None
    if spec.obj_get('is_bfv'):
        return request, None
    disk_format = _disk_format(spec)
    if not disk_format:
        return request, None
    trait = 'COMPUTE_IMAGE_TYPE_%s' % disk_format.upper()
    if not hasattr(os_traits, trait):
        LOG.error('The image\'s disk format %r gives the trait %s, which '
                  'os-traits does not know; the image type is not '
                  'required of hosts', disk_format, trait)
        return request, None
    return (dataclasses.replace(
        request, root_required=request.root_required | {trait}),
        'requires %s' % trait)


def compute_status_filter(spec, request, aggregates):
    """Always: no host whose compute service is disabled (its root
    provider carries ``COMPUTE_STATUS_DISABLED``)."""
    trait = os_traits.COMPUTE_STATUS_DISABLED
    return (dataclasses.replace(
        request, root_forbidden=request.root_forbidden | {trait}),
        'forbids %s' % trait)


def _all_required_traits(request):
    traits = set(request.root_required)
    for group in request.groups:
        traits |= group.required_traits
    return traits


def isolate_aggregates(spec, request, aggregates):
    """``[scheduler] enable_isolated_aggregate_filtering``: an aggregate
    whose metadata requires a trait (``trait:X=required``) that the
    request does not ask for is forbidden to it."""
    if not CONF.scheduler.enable_isolated_aggregate_filtering:
        return request, None
    asked = _all_required_traits(request)
    isolated = set()
    for aggregate in aggregates:
        for key, value in aggregate.metadata.items():
            if (key.startswith(TRAIT_KEY_PREFIX) and value == 'required'
                    and key[len(TRAIT_KEY_PREFIX):] not in asked):
                isolated.add(aggregate.uuid)
                break
    if not isolated:
        return request, None
    base = request.unsuffixed
    return (_with_unsuffixed(
        request,
        forbidden_aggregates=base.forbidden_aggregates | isolated),
        'out of %d aggregate(s) that require traits it does not ask for'
        % len(isolated))


def transform_image_metadata(spec, request, aggregates):
    """``[scheduler] image_metadata_prefilter``: image properties such as
    ``hw_disk_bus=scsi`` become required root traits
    (``COMPUTE_STORAGE_BUS_SCSI``). A value os-traits does not know
    leaves the whole filter out, as in Nova."""
    if not CONF.scheduler.image_metadata_prefilter:
        return request, None
    properties = _image_properties(spec)
    traits = set()
    for name, prefix in IMAGE_PROPERTY_TRAITS:
        value = properties.get(name)
        if value is None:
            continue
        trait = '%s_%s' % (prefix, value.replace('-', '_').upper())
        if not hasattr(os_traits, trait):
            LOG.error('The image property %s=%s gives the trait %s, which '
                      'os-traits does not know; no image property is '
                      'required of hosts', name, value, trait)
            return request, None
        traits.add(trait)
    if not traits:
        return request, None
    return (dataclasses.replace(
        request, root_required=request.root_required | traits),
        'requires %s' % ', '.join(sorted(traits)))


def max_placement_results(spec, request, aggregates):
    """``[scheduler] max_placement_results``: the most candidate hosts
    kept (Placement's ``limit``)."""
    return (dataclasses.replace(
        request, limit=CONF.scheduler.max_placement_results),
        'keeps at most %d candidates'
        % CONF.scheduler.max_placement_results)


# Nova's order.
ALL = (
    require_tenant_aggregate,
    map_az_to_placement_aggregate,
    require_image_type_support,
    compute_status_filter,
    isolate_aggregates,
    transform_image_metadata,
    max_placement_results,
)


def apply(spec, request, aggregates, filters=ALL):
    """Run every request filter in turn; return the final request and
    ``[(name, note)]`` for the ones that added something."""
    ran = []
    for request_filter in filters:
        request, note = request_filter(spec, request, aggregates)
        if note is not None:
            LOG.debug('Request filter %s: %s', request_filter.__name__,
                      note)
            ran.append((request_filter.__name__, note))
    return request, ran
