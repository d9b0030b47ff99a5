"""Builders for host NUMA topologies in the agreed JSON shape."""


def cell(cell_id, cpuset=(), pcpuset=(), memory_mb=4096, siblings=(),
         mempages=None):
    """One host cell; ``mempages`` is ``{size_kb: total}`` or ``None``."""
    raw = {'id': cell_id, 'cpuset': list(cpuset), 'pcpuset': list(pcpuset),
           'memory_mb': memory_mb, 'siblings': [list(s) for s in siblings]}
    if mempages is not None:
        raw['mempages'] = [{'size_kb': size, 'total': total, 'reserved': 0}
                           for size, total in sorted(mempages.items())]
    return raw


def host(*cells):
    return {'cells': list(cells)}


def usage(*cells):
    """Usage cells given as dicts (only the keys that matter)."""
    return {'cells': list(cells)}
