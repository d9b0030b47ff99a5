"""A request in Placement's terms: resource groups, traits, aggregates.

What Nova's ``ResourceRequest`` asks of Placement's allocation
candidates, as plain immutable values that the host table answers
without any service in front of it:

* the unsuffixed group (suffix ``''``): its resources may come from any
  providers of one tree, each class from one provider;
* each suffixed group (``resources1:``, ``resources_NET:``...): all its
  resources from one single provider;
* ``group_policy``: ``'isolate'`` puts the suffixed groups on distinct
  providers, ``'none'`` lets them share one;
* ``root_required`` / ``root_forbidden``: traits on the root provider
  (the compute node), which Nova's request filters add.

Nothing here reads configuration or the database.
"""

import dataclasses
from typing import Optional

UNSUFFIXED = ''
GROUP_POLICIES = ('none', 'isolate')


@dataclasses.dataclass(frozen=True)
class RequestGroup:
    """One group: what a single provider (suffixed) or one tree
    (unsuffixed) must give.

    ``member_of`` is a tuple of aggregate-UUID sets: the provider must be
    in at least one aggregate of every set (any-of within a set, all-of
    across sets). ``forbidden_aggregates``: in none of these.
    """

    suffix: str = UNSUFFIXED
    resources: dict = dataclasses.field(default_factory=dict)
    required_traits: frozenset = frozenset()
    forbidden_traits: frozenset = frozenset()
    member_of: tuple = ()
    forbidden_aggregates: frozenset = frozenset()

    @property
    def use_same_provider(self):
        return self.suffix != UNSUFFIXED

    def is_empty(self):
        return not (self.resources or self.required_traits
                    or self.forbidden_traits or self.member_of
                    or self.forbidden_aggregates)


@dataclasses.dataclass(frozen=True)
class ResourceRequest:
    """The whole request: groups by suffix, and what holds for the root."""

    groups: tuple = ()
    group_policy: Optional[str] = None
    root_required: frozenset = frozenset()
    root_forbidden: frozenset = frozenset()
    # Placement's ``limit``: the most candidates to return; None: all.
    limit: Optional[int] = None

    def group(self, suffix=UNSUFFIXED):
        for group in self.groups:
            if group.suffix == suffix:
                return group
        return None

    @property
    def unsuffixed(self):
        return self.group(UNSUFFIXED) or RequestGroup()

    @property
    def suffixed(self):
        return tuple(group for group in self.groups
                     if group.suffix != UNSUFFIXED)

    def all_resources(self):
        """``{class: amount}`` summed over every group."""
        total = {}
        for group in self.groups:
            for name, amount in group.resources.items():
                total[name] = total.get(name, 0) + amount
        return total
