"""Reading gantt-manage's text tables back in tests."""

import re

UUID_RE = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                     r'[0-9a-f]{12}$')


def table(out):
    """The rows of the first table in ``out``, as lists of cells.

    Cells are separated by two spaces or more; the table ends at a blank
    line or at the end of the output.
    """
    lines = out.splitlines()
    start = next(index for index, line in enumerate(lines)
                 if line.startswith('--'))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        rows.append(re.split(r'\s{2,}', line.strip()))
    return rows
