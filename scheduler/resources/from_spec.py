"""From a RequestSpec to the resource request Nova would send Placement.

:func:`resource_request` reads the flavor, its extra specs and the image
properties of a :class:`scheduler.objects.request_spec.RequestSpec` as
Nova's ``ResourceRequest.from_request_spec`` does, and checks them as
Nova's API and Placement would::

    spec.flavor.extra_specs = {'resources:CUSTOM_BAREMETAL_GOLD': '1',
                               'resources:VCPU': '0',
                               'resources:MEMORY_MB': '0',
                               'resources:DISK_GB': '0'}
    from_spec.resource_request(spec).all_resources()
    # {'CUSTOM_BAREMETAL_GOLD': 1}

What becomes what:

* ``resources[S]:CLASS=N`` asks N of CLASS in group S; ``trait[S]:NAME``
  ``=required|forbidden`` asks for or against a trait. S is Nova's
  suffix: 1 to 64 of ``a-zA-Z0-9_-`` (``resources1:``, ``trait_NET:``);
  no suffix is the unsuffixed group. A key with any other suffix is not
  one of these and is left alone, as Nova leaves it.
* The image's ``trait:NAME=required`` properties are required traits of
  the unsuffixed group; an image cannot forbid a trait (Nova's image
  model drops any other value).
* ``hw:cpu_policy`` (or the image's ``hw_cpu_policy``) ``dedicated``
  asks ``PCPU`` = the flavor's vCPUs instead of ``VCPU``; ``mixed`` asks
  the dedicated vCPUs (``hw:cpu_dedicated_mask`` or the realtime mask)
  as ``PCPU`` and the rest as ``VCPU``; ``hw:emulator_threads_policy=``
  ``isolate`` adds one ``PCPU``. ``hw:cpu_thread_policy`` ``isolate``
  forbids ``HW_CPU_HYPERTHREADING``, ``require`` requires it.
  ``translate_pinning=False`` leaves this out: Nova's second query, with
  ``VCPU``, for hosts that do not report ``PCPU`` yet.
* Then the flavor's sizes fill in what the extra specs did not ask,
  in the unsuffixed group: ``VCPU`` (unless ``VCPU`` or ``PCPU`` is
  asked anywhere), ``MEMORY_MB``, ``DISK_GB`` = root (unless the spec
  boots from volume) + ephemeral + swap in GiB rounded up, if not 0.
* Last, amounts of 0 are dropped (``resources:VCPU=0`` removes the
  class, as a baremetal flavor does), and groups left empty with them.

Refusals (nothing is changed by a refused request):

* :class:`scheduler.exception.InvalidResourceRequest` for what Nova's
  API refuses in a flavor: an unknown resource class or trait name, an
  amount that is not an integer from 0 to 2**31-1, a trait value other
  than ``required``/``forbidden``, a ``group_policy`` other than
  ``none``/``isolate``; the NUMA library's InvalidRequest errors for the
  CPU policy conflicts (``resources:VCPU`` with ``hw:cpu_policy``...).
* :class:`scheduler.exception.ResourceRequestRefused` (a NoValidHost)
  for what Placement answers with 400, after which Nova finds no host:
  a group with traits but no resources, more than one suffixed group
  without ``group_policy``, a trait required and forbidden in one group,
  no resources at all.

With ``[filter_scheduler] pci_in_placement`` or ``numa_in_placement``,
PCI devices and a multi-node guest's PCPU are asked in groups of their
own (:mod:`scheduler.resources.generated_groups`). Nova's other
translations (memory encryption, vPMEM, vTPM, secure boot, ports) are not
made here.
"""

import re

import os_resource_classes
import os_traits

from scheduler import exception
from scheduler import image_properties
from scheduler import validation
from scheduler.numa import request as numa_request
from scheduler.resources import generated_groups
from scheduler.resources import names
from scheduler.resources import request

# Nova's pattern for the keys of a granular request: the prefix, an
# optional suffix naming the group, and the class or trait name.
_KEY = re.compile(r'(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)')
GROUP_POLICY_KEY = 'group_policy'
REQUIRED, FORBIDDEN = 'required', 'forbidden'
MAX_AMOUNT = validation.MAX_INT32

VCPU = os_resource_classes.VCPU
PCPU = os_resource_classes.PCPU
MEMORY_MB = os_resource_classes.MEMORY_MB
DISK_GB = os_resource_classes.DISK_GB
_THREAD_TRAIT = {numa_request.ISOLATE: FORBIDDEN,
                 numa_request.REQUIRE: REQUIRED}


class _Draft:
    """The groups while they are read, by suffix: resources (zeros kept
    until the end, as Nova keeps them), required and forbidden traits."""

    def __init__(self):
        self._groups = {}
        # Suffixes of groups made from other parts than the extra specs.
        self.generated = set()

    def mark_generated(self, suffixes):
        self.generated.update(suffixes)

    def _group(self, suffix):
        if suffix not in self._groups:
            self._groups[suffix] = ({}, set(), set())
        return self._groups[suffix]

    def set_resource(self, suffix, name, amount):
        self._group(suffix)[0][name] = amount

    def add_trait(self, suffix, name, value):
        resources, required, forbidden = self._group(suffix)
        (required if value == REQUIRED else forbidden).add(name)

    def merged(self):
        """``{class: amount}`` over every group, zeros included."""
        total = {}
        for resources, _required, _forbidden in self._groups.values():
            for name, amount in resources.items():
                total[name] = total.get(name, 0) + amount
        return total

    def freeze(self):
        """The groups without zero amounts, the empty ones left out;
        the unsuffixed group first, then by suffix."""
        groups = []
        for suffix in sorted(self._groups):
            resources, required, forbidden = self._groups[suffix]
            group = request.RequestGroup(
                suffix=suffix,
                resources={name: amount for name, amount
                           in sorted(resources.items()) if amount},
                required_traits=frozenset(required),
                forbidden_traits=frozenset(forbidden))
            if not group.is_empty():
                groups.append(group)
        return tuple(groups)


def resource_request(spec, translate_pinning=True):
    """The :class:`request.ResourceRequest` of ``spec`` (see the module
    docstring). ``member_of``, ``root_required`` and ``limit`` are left
    for the request filters and the caller.

    :raises: InvalidResourceRequest, ResourceRequestRefused, and the
        NUMA request errors (InvalidRequest subclasses).
    """
    flavor = spec.flavor
    extra_specs = dict(flavor.obj_get('extra_specs', {}))
    image = spec.obj_get('image')
    image_props = dict(image.obj_get('properties', {})) if image else {}
    policy = _group_policy(extra_specs)
    draft = _Draft()
    _read_extra_specs(draft, extra_specs)
    _read_image_traits(draft, image_props)
    # Nova's API checks the CPU policies against each other and against
    # resources:VCPU/PCPU before a request is ever made; so does this.
    numa = numa_request.get_request(flavor.vcpus, flavor.memory_mb,
                                    extra_specs, image_props)
    if translate_pinning:
        _translate_pinning(draft, flavor.vcpus, extra_specs, image_props,
                           numa)
    _fill_in_flavor_sizes(draft, spec)
    groups = draft.freeze() + generated_groups.pci_groups(spec)
    made = sum(1 for group in groups
               if group.suffix in draft.generated
               or group.suffix.startswith(generated_groups.PCI_PREFIX))
    policy = _default_policy(groups, policy, made)
    _check_placement_rules(groups, policy)
    return request.ResourceRequest(groups=groups, group_policy=policy)


def _default_policy(groups, policy, generated):
    """Nova's default for groups from outside the flavor: ``'none'``
    where the flavor has at most one suffixed group and no policy."""
    suffixed = sum(1 for group in groups if group.suffix)
    if policy is None and suffixed >= 2 and suffixed - generated <= 1:
        return 'none'
    return policy


def _refuse(key, value, problem):
    raise exception.InvalidResourceRequest(
        reason='flavor extra spec %s=%r: %s' % (key, value, problem))


def _group_policy(extra_specs):
    value = extra_specs.get(GROUP_POLICY_KEY)
    if value is not None and value not in request.GROUP_POLICIES:
        _refuse(GROUP_POLICY_KEY, value,
                'must be one of %s' % ', '.join(request.GROUP_POLICIES))
    return value


def _amount(key, value):
    try:
        amount = int(value)
    except (TypeError, ValueError):
        _refuse(key, value, 'the amount must be an integer')
    if not 0 <= amount <= MAX_AMOUNT:
        _refuse(key, value, 'the amount must be from 0 to %d' % MAX_AMOUNT)
    return amount


def _read_extra_specs(draft, extra_specs):
    for key, value in extra_specs.items():
        match = _KEY.fullmatch(key)
        if not match:
            continue
        prefix, suffix, name = match.groups()
        suffix = suffix or request.UNSUFFIXED
        where = 'flavor extra spec %r' % key
        if prefix == 'resources':
            names.check_resource_class(name, where)
            draft.set_resource(suffix, name, _amount(key, value))
        else:
            names.check_trait(name, where)
            if value not in (REQUIRED, FORBIDDEN):
                _refuse(key, value, "must be '%s' or '%s'"
                        % (REQUIRED, FORBIDDEN))
            draft.add_trait(suffix, name, value)


def _read_image_traits(draft, image_props):
    props = image_properties.normalise(image_props)
    for name in props.get('traits_required', ()):
        names.check_trait(name, 'image property %r' % ('trait:' + name))
        draft.add_trait(request.UNSUFFIXED, name, REQUIRED)


def _cpu_policy(extra_specs, image_props):
    # Already checked by the NUMA request: the flavor's wins if set.
    return (extra_specs.get('hw:cpu_policy')
            or image_props.get('hw_cpu_policy'))


def _thread_policy(extra_specs, image_props):
    flavor = extra_specs.get('hw:cpu_thread_policy')
    if flavor in (None, '', numa_request.PREFER):
        return flavor or image_props.get('hw_cpu_thread_policy')
    return flavor


def _translate_pinning(draft, vcpus, extra_specs, image_props, numa):
    """Nova's translation of the ``hw:`` CPU policies into PCPU, VCPU
    and the hyperthreading trait (``resources:PCPU`` asked directly is
    not translated: it is already there)."""
    policy = _cpu_policy(extra_specs, image_props)
    if policy in (numa_request.DEDICATED, numa_request.MIXED):
        if policy == numa_request.DEDICATED:
            pcpus = vcpus
        else:
            pcpus = sum(len(cell.pcpuset) for cell in numa.cells)
            draft.set_resource(request.UNSUFFIXED, VCPU, vcpus - pcpus)
        if numa.emulator_threads_policy == numa_request.EMULATOR_ISOLATE:
            pcpus += 1
        split = generated_groups.numa_split(numa)
        if split is None:
            draft.set_resource(request.UNSUFFIXED, PCPU, pcpus)
        else:
            draft.mark_generated(split)
            for suffix, amount in split.items():
                draft.set_resource(suffix, PCPU, amount)
    trait = _THREAD_TRAIT.get(_thread_policy(extra_specs, image_props))
    if trait:
        draft.add_trait(request.UNSUFFIXED, os_traits.HW_CPU_HYPERTHREADING,
                        trait)


def _fill_in_flavor_sizes(draft, spec):
    flavor = spec.flavor
    asked = draft.merged()
    if VCPU not in asked and PCPU not in asked:
        draft.set_resource(request.UNSUFFIXED, VCPU, flavor.vcpus)
    if MEMORY_MB not in asked:
        draft.set_resource(request.UNSUFFIXED, MEMORY_MB, flavor.memory_mb)
    if DISK_GB not in asked:
        # Swap is in MiB: whole GiB, rounded up. A volume-backed server's
        # root disk is not on the host (Nova's ``is_bfv``: Gantt's spec
        # does not carry it yet; read once it does).
        disk = flavor.ephemeral_gb + -(-flavor.swap // 1024)
        if not ('is_bfv' in spec.fields and spec.obj_get('is_bfv')):
            disk += flavor.root_gb
        if disk:
            draft.set_resource(request.UNSUFFIXED, DISK_GB, disk)


def _label(group):
    return 'the unsuffixed group' if not group.suffix else (
        'group %r' % group.suffix)


def _check_placement_rules(groups, policy):
    """Placement's 400s on GET /allocation_candidates (microversion 1.36,
    as Nova asks it), which Nova turns into NoValidHost."""
    def refuse(reason):
        raise exception.ResourceRequestRefused(reason=reason)

    if not any(group.resources for group in groups):
        refuse('it asks for no resources at all (every amount is 0)')
    for group in groups:
        if not group.resources:
            refuse('%s has traits (%s) but no resources; a flavor cannot '
                   'put a resourceless group in a same_subtree' % (
                       _label(group), ', '.join(sorted(
                           group.required_traits | group.forbidden_traits))))
        both = group.required_traits & group.forbidden_traits
        if both:
            refuse('%s both requires and forbids %s' % (
                _label(group), ', '.join(sorted(both))))
    suffixed = [group.suffix for group in groups if group.suffix]
    if len(suffixed) > 1 and policy is None:
        refuse('the flavor asks for %d suffixed groups (%s) but sets no '
               "group_policy ('none' or 'isolate')" % (
                   len(suffixed), ', '.join(suffixed)))
