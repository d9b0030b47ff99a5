"""What a claim takes, in Placement's words.

Gantt's drivers speak of a claim as :class:`placement_types.Resources`
(VCPU, MEMORY_MB, DISK_GB) plus ``{resource class: amount}`` for the
other classes. Placement's allocation request (``GET
/allocation_candidates`` items, the body of ``PUT /allocations``, Nova's
``Selection.allocation_request``) names the provider of each amount and,
since microversion 1.34, which request group each provider satisfies::

    >>> allocation_request('4e8e5957-...', Resources(2, 2048, 20))
    {'allocations': {'4e8e5957-...': {'resources':
        {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 20}}},
     'mappings': {'': ['4e8e5957-...']}}

Zero amounts are left out: Placement refuses an allocation of 0.
"""

_STANDARD = (('vcpus', 'VCPU'), ('memory_mb', 'MEMORY_MB'),
             ('disk_gb', 'DISK_GB'))


def amounts(resources, extra=None):
    """``{resource class: amount}`` of a claim, zeros left out."""
    found = {}
    for field, name in _STANDARD:
        value = int(getattr(resources, field) or 0)
        if value:
            found[name] = value
    for name, value in (extra or {}).items():
        if value:
            found[name] = int(value)
    return found


def allocation_request(provider_uuid, resources, extra=None):
    """Placement's allocation request of a claim taken whole from one
    root provider (the compute node's)."""
    return {'allocations': {provider_uuid: {
                'resources': amounts(resources, extra)}},
            'mappings': {'': [provider_uuid]}}
