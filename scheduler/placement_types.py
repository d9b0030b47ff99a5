"""The plain types and names every layer of Gantt shares.

Filters, weighers and versioned objects import these instead of the
database layer or the scheduler core; the database layer, the drivers and
the conductor's tasks import them too, so each is defined once. Nothing
here imports anything of Gantt's.
"""

import collections
import dataclasses
from typing import Optional

# What a claim takes of a compute node.
Resources = collections.namedtuple('Resources', 'vcpus memory_mb disk_gb')

# What the scheduler keeps of one instance on a host.
InstanceInfo = collections.namedtuple('InstanceInfo',
                                      'flavor_id image_properties')
InstanceInfo.__doc__ = """What the scheduler keeps of one instance.

``flavor_id`` is the flavor's ``flavorid``, or its name when it has none;
``image_properties`` the properties of the image it booted from.
"""


def info_from_flavor_and_image(flavor, image_properties):
    """An InstanceInfo from a flavor (object or dict) and image props."""
    if isinstance(flavor, dict):
        flavor_id = flavor.get('flavorid') or flavor.get('name')
    elif flavor is not None:
        flavor_id = flavor.obj_get('flavorid') or flavor.obj_get('name')
    else:
        flavor_id = None
    return InstanceInfo(flavor_id, dict(image_properties or {}))


# Server group policies, and the ones a claim enforces in its transaction.
GROUP_POLICIES = ('affinity', 'anti-affinity', 'soft-affinity',
                  'soft-anti-affinity')
HARD_POLICIES = ('affinity', 'anti-affinity')
# The one rule a server group may carry (anti-affinity only).
MAX_SERVER_PER_HOST = 'max_server_per_host'

# The scheduler hint by which the conductor marks a live migration's
# request (Nova's name), so that filters that do not apply to one skip it.
CHECK_TYPE_HINT = '_nova_check_type'

# The aggregate metadata key that names an availability zone.
AZ_KEY = 'availability_zone'


@dataclasses.dataclass(frozen=True)
class Aggregate:
    """An aggregate as readers see it; changing it changes nothing in SQL."""

    id: int
    uuid: str
    name: str
    hosts: frozenset
    metadata: dict

    @property
    def availability_zone(self) -> Optional[str]:
        return self.metadata.get(AZ_KEY)
