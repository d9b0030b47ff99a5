"""The exact answer for one provider tree: a search over placements.

The column passes of :mod:`scheduler.resources.candidates` settle almost
every tree at once; the few they cannot (several groups that could share
a provider and would overfill it together, ``isolate`` beyond what Hall's
condition settles, traits the unsuffixed group can only gather from
several providers) come here. A *unit* is what must land on one provider:
a suffixed group, or one class of the unsuffixed group. The search places
the units one by one (the most constrained first) and backtracks when a
provider would go over its limit, an isolated group would share a
provider, or the unsuffixed group's providers cannot carry its required
traits together. Trees are small (a node, its NUMA cells and PCI PFs), so
this stays cheap; it is the same rule the column passes decide, spelled
out.
"""

import dataclasses


@dataclasses.dataclass
class Unit:
    """What must come from one provider.

    ``amounts``: ``((column, amount), ...)``; ``hosts``: the rows that can
    take the unit alone; ``isolated``: a suffixed group under ``isolate``;
    ``collective``: a class of the unsuffixed group, whose required traits
    the group's providers carry together.
    """

    suffix: str
    amounts: tuple
    hosts: list
    isolated: bool = False
    collective: bool = False
    named_amounts: tuple = ()


def place(units, limit_of, traits_of, needed_traits):
    """One placement of every unit, ``[(unit, row), ...]``, or None.

    ``limit_of(row, column)``: what the row can take of the class in all;
    ``traits_of(row)``: the row's required-trait bits (an int over the
    unsuffixed group's required traits); ``needed_traits``: all those bits.
    """
    order = sorted(units, key=lambda unit: len(unit.hosts))
    chosen = []
    load = {}
    taken = set()

    def covered():
        bits = 0
        for unit, row in chosen:
            if unit.collective:
                bits |= traits_of(row)
        return bits & needed_traits == needed_traits

    def fits(unit, row):
        if unit.isolated and row in taken:
            return False
        return all(load.get((row, column), 0) + amount <= limit_of(row, column)
                   for column, amount in unit.amounts)

    def step(index):
        if index == len(order):
            return (not needed_traits) or covered()
        unit = order[index]
        for row in unit.hosts:
            if not fits(unit, row):
                continue
            for column, amount in unit.amounts:
                load[(row, column)] = load.get((row, column), 0) + amount
            if unit.isolated:
                taken.add(row)
            chosen.append((unit, row))
            if step(index + 1):
                return True
            chosen.pop()
            if unit.isolated:
                taken.discard(row)
            for column, amount in unit.amounts:
                load[(row, column)] -= amount
        return False

    if step(0):
        return list(chosen)
    return None
