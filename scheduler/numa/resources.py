"""Pinning asked for through Placement-style extra specs.

Besides ``hw:cpu_policy`` and ``hw:cpu_thread_policy``, Nova accepts the
Placement spelling of the same wishes, and so does Gantt:

* ``resources:PCPU=N`` (or ``resourcesG:PCPU``) asks for dedicated CPUs:
  the CPU policy becomes ``dedicated``; N must equal the flavor's vCPUs
  (plus one with ``hw:emulator_threads_policy=isolate``).
* ``resources:VCPU=N`` asks for shared CPUs: the policy becomes
  ``shared``.
* ``trait:HW_CPU_HYPERTHREADING=forbidden`` means thread policy
  ``isolate``, ``=required`` (or the image's
  ``trait:HW_CPU_HYPERTHREADING=required``) means ``require``.

Mixing the two spellings is an error, as in Nova::

    resources.cpu_policies(4, {'resources:PCPU': '4'}, {}, None, None)
    # -> ('dedicated', None)
"""

import re

from scheduler.numa import errors

_RESOURCE_RE = re.compile(r'^resources([1-9][0-9]*)?:(VCPU|PCPU)$')
_TRAIT_RE = re.compile(r'^trait([1-9][0-9]*)?:HW_CPU_HYPERTHREADING$')
_TRAIT = 'HW_CPU_HYPERTHREADING'


def _resource_counts(extra_specs: dict) -> dict[str, int]:
    counts = {'VCPU': 0, 'PCPU': 0}
    for key, value in extra_specs.items():
        match = _RESOURCE_RE.match(key)
        if not match:
            continue
        try:
            counts[match.group(2)] += int(value)
        except (TypeError, ValueError):
            raise errors.InvalidNUMARequest(
                key=key, value=value,
                reason='must be an integer count') from None
    return counts


def _hyperthreading_trait(extra_specs: dict, image_props: dict):
    for key, value in extra_specs.items():
        if _TRAIT_RE.match(key):
            if value not in ('required', 'forbidden'):
                raise errors.InvalidNUMARequest(
                    key=key, value=value,
                    reason="must be 'required' or 'forbidden'")
            return value
    if image_props.get('trait:' + _TRAIT) == 'required' or \
            _TRAIT in (image_props.get('traits_required') or ()):
        return 'required'
    return None


def cpu_policies(vcpus: int, extra_specs: dict, image_props: dict,
                 cpu_policy: str | None, thread_policy: str | None):
    """Return ``(cpu_policy, thread_policy)`` after the Placement specs.

    ``cpu_policy`` and ``thread_policy`` are what the ``hw:`` keys (and the
    image) asked for; an error names the conflicting keys.
    """
    counts = _resource_counts(extra_specs)
    if cpu_policy and (counts['VCPU'] or counts['PCPU']):
        raise errors.NUMARequestConflict(
            reason="resources:VCPU / resources:PCPU cannot be combined with "
                   "hw:cpu_policy or hw_cpu_policy; use one or the other")
    if counts['VCPU'] and counts['PCPU']:
        raise errors.NUMARequestConflict(
            reason='resources:VCPU and resources:PCPU cannot both be given')
    if counts['PCPU']:
        emulator = extra_specs.get('hw:emulator_threads_policy')
        wanted = vcpus + 1 if emulator == 'isolate' else vcpus
        if counts['PCPU'] != wanted:
            raise errors.InvalidNUMARequest(
                key='resources:PCPU', value=counts['PCPU'],
                reason='must equal the flavor vCPUs%s (%d)' % (
                    ' + 1 for hw:emulator_threads_policy=isolate'
                    if wanted > vcpus else '', wanted))
        cpu_policy = 'dedicated'
    elif counts['VCPU']:
        cpu_policy = 'shared'
    trait = _hyperthreading_trait(extra_specs, image_props)
    if trait and thread_policy:
        raise errors.NUMARequestConflict(
            reason='trait:%s cannot be combined with hw:cpu_thread_policy '
                   'or hw_cpu_thread_policy; use one or the other' % _TRAIT)
    if trait == 'forbidden':
        thread_policy = 'isolate'
    elif trait == 'required':
        thread_policy = 'require'
    return cpu_policy, thread_policy
