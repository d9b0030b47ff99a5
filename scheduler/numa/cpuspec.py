"""CPU list specifications such as ``0-3,^2,6``.

Flavor extra specs (``hw:numa_cpus.N``, ``hw:cpu_dedicated_mask``,
``hw:cpu_realtime_mask``) name guest CPUs with comma-separated items: a
number, an inclusive range ``A-B``, or an exclusion ``^N`` / ``^A-B`` that
removes CPUs added by the other items::

    >>> sorted(parse_cpu_spec('0-3,^2,6'))
    [0, 1, 3, 6]
"""

from scheduler.numa import errors


def _parse_range(item: str, key: str, spec: str) -> range:
    first, sep, last = item.partition('-')
    try:
        start = int(first)
        end = int(last) if sep else start
    except ValueError:
        raise errors.InvalidCPUSpec(
            key=key, value=spec,
            reason='%r is not a CPU number or range' % item) from None
    if start < 0 or end < start:
        raise errors.InvalidCPUSpec(
            key=key, value=spec, reason='%r is not a valid range' % item)
    return range(start, end + 1)


def parse_cpu_spec(spec: str, key: str = 'cpu spec') -> set[int]:
    """Return the set of CPU numbers that ``spec`` names.

    ``key`` is only used in the error message, to say where the spec came
    from. Raises :class:`errors.InvalidCPUSpec` for a malformed item.
    """
    if not isinstance(spec, str):
        raise errors.InvalidCPUSpec(key=key, value=spec,
                                    reason='must be a string')
    included: set[int] = set()
    excluded: set[int] = set()
    for raw in spec.split(','):
        item = raw.strip()
        if not item:
            continue
        if item.startswith('^'):
            excluded.update(_parse_range(item[1:].strip(), key, spec))
        else:
            included.update(_parse_range(item, key, spec))
    return included - excluded


def format_cpu_spec(cpus) -> str:
    """Return a compact spec (``'0-3,6'``) for a collection of CPU numbers."""
    items = []
    ordered = sorted(set(cpus))
    start = prev = None
    for cpu in ordered + [None]:
        if start is not None and (cpu is None or cpu != prev + 1):
            items.append(str(start) if start == prev
                         else '%d-%d' % (start, prev))
            start = None
        if cpu is not None:
            if start is None:
                start = cpu
            prev = cpu
    return ','.join(items)
