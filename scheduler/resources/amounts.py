"""What a claim takes, per class, on a node chosen without the
scheduler: a forced host, an evacuation's or a migration's named host.

The scheduler's placement stage works out a claim's amounts over the host
table; a conductor that claims on a node it was given asks here::

    resources, extra = amounts.forced_amounts(spec, node_classes)
    claims.claim_in_sql(node.id, uuid, resources, ..., extra=extra)

``node_classes``: the classes of the node's inventory. A request for
dedicated CPUs takes PCPU where the node reports PCPU and, as Nova's
fallback query does (unless ``[workarounds]
disable_fallback_pcpu_query``), VCPU where it does not.
"""

from scheduler import conf
from scheduler import placement_types
from scheduler.resources import from_spec
from scheduler.resources import generated_groups

CONF = conf.CONF

# Placement's classic classes -> the field of placement_types.Resources.
CLASSIC = {'VCPU': 'vcpus', 'MEMORY_MB': 'memory_mb', 'DISK_GB': 'disk_gb'}


def split(total):
    """``(Resources, extra or None)`` of ``{class: amount}``."""
    total = dict(total)
    resources = placement_types.Resources(
        **{field: total.pop(name, 0) for name, field in CLASSIC.items()})
    return resources, total or None


def forced_amounts(spec, node_classes):
    """``(resources, extra)`` a claim of ``spec`` takes on a node whose
    inventory has ``node_classes``. Raises what the parsing of the
    request raises (InvalidResourceRequest, ResourceRequestRefused)."""
    request = from_spec.resource_request(spec)
    if ('PCPU' in request.all_resources()
            and not CONF.workarounds.disable_fallback_pcpu_query
            and not set(generated_groups.node_resources(request))
            <= set(node_classes)):
        plain = from_spec.resource_request(spec, translate_pinning=False)
        if set(generated_groups.node_resources(plain)) <= set(node_classes):
            request = plain
    return split(generated_groups.node_resources(request))
