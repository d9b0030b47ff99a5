"""The JsonFilter's query language: read, check and evaluate a query.

A query is JSON: a list whose first item is a command and whose other
items are its arguments. An argument is a nested query (a list), a
``$variable``, or a literal (string, number, true/false, object)::

    ["and", [">=", "$free_ram_mb", 1024],
            ["in", "$hypervisor_type", "QEMU", "KVM"],
            ["not", ["=", "$stats.maintenance", "yes"]]]

Commands, as Nova evaluates them:

* ``= < > <= >=`` compare the first argument with each of the others; all
  must hold, and fewer than two arguments is false. A comparison Python
  cannot make (a string with a number) is false;
* ``in``: the first argument equals one of the others;
* ``and`` / ``or``: all / any argument is true;
* ``not``: the list of the negated arguments. At the top of a query a list
  passes if any item is true; as the argument of ``and``/``or`` any
  non-empty list counts as true (Nova's behaviour, kept).

A variable names a host attribute of ``host_cache.PUBLIC_ATTRIBUTES``
(``$free_ram_mb``, ``$host``, ``$stats``...) or the host's compute service
(``$service``, whose fields ``SERVICE_FIELDS`` names: ``$service.disabled``,
``$service.forced_down``...), then optionally keys inside it
(``$stats.gpu``). A variable the host lacks, an empty string and ``null``
are dropped from the arguments. An empty query passes every host.

A variable that names nothing Gantt's hosts expose (``$free_ram``,
``$service.topic``, ``$__class__``) is read as ``null`` for every host, and
so dropped, as Nova reads an attribute its HostState lacks; the query
lists these in ``unknown`` so that the filter can say so. Nothing in a
query is executed, and nothing is looked up by attribute beyond those
names: a query naming an unknown command (``["__import__", "os"]``) or
anything that is not JSON is refused with InvalidRequest before any host
is looked at, and so is a query longer than ``MAX_QUERY_LEN`` characters
or nested deeper than ``MAX_QUERY_DEPTH`` lists (or objects)::

    query = parse('[">=", "$free_ram_mb", 1024]')
    query.passes(host_state)            # one host
    query.passes_all(table, rows)       # boolean array over table rows
    query.unknown                       # ('$free_ram',): read as null
"""

import json
import operator

from oslo_log import log as logging
import numpy as np

from scheduler import exception
from scheduler import host_cache

LOG = logging.getLogger(__name__)

_COMPARISONS = {'=': operator.eq, '<': operator.lt, '>': operator.gt,
                '<=': operator.le, '>=': operator.ge}
COMMANDS = frozenset(_COMPARISONS) | {'in', 'not', 'or', 'and'}
# The longest query text, and the deepest nesting, a query may have.
MAX_QUERY_LEN = 64 * 1024
MAX_QUERY_DEPTH = 32
# The fields of a host's service (host_cache.ServiceInfo) a query may read.
SERVICE_FIELDS = frozenset(('id', 'host', 'binary', 'disabled',
                            'disabled_reason', 'forced_down', 'last_seen_up',
                            'created_at'))
# Integers beyond this are not compared column-wise (float64 is exact
# below it).
_EXACT_INT = 2 ** 53


class Const:
    """A value that is the same for every host."""

    __slots__ = ('value',)

    def __init__(self, value):
        self.value = value


class Var:
    """A ``$variable``: an attribute name, then keys inside it."""

    __slots__ = ('path',)

    def __init__(self, path):
        self.path = tuple(path)


class Command:
    __slots__ = ('name', 'args')

    def __init__(self, name, args):
        self.name = name
        self.args = args


def _refuse(reason):
    raise exception.InvalidRequest(reason='JsonFilter query: %s' % reason)


def _known(path):
    if path[0] == 'service':
        return len(path) == 1 or path[1] in SERVICE_FIELDS
    return path[0] in host_cache.PUBLIC_ATTRIBUTES


def _compile_argument(item, unknown):
    if isinstance(item, list):
        return _compile(item, unknown)
    if isinstance(item, str):
        if not item:
            return None
        if item.startswith('$'):
            path = item[1:].split('.')
            if not _known(path):
                # null for every host: dropped, as null is.
                unknown.add(item)
                return None
            return Var(path)
        return Const(item)
    if item is None:
        return None
    if isinstance(item, (bool, int, float, dict)):
        return Const(item)
    _refuse('cannot read %r' % (item,))


def _compile(query, unknown):
    if not query:
        return Const(True)
    if not isinstance(query, list):
        _refuse('a query is a list, not %r' % (query,))
    name = query[0]
    if not isinstance(name, str) or name not in COMMANDS:
        _refuse('unknown command %r; commands are %s'
                % (name, ' '.join(sorted(COMMANDS))))
    args = [_compile_argument(item, unknown) for item in query[1:]]
    return Command(name, [arg for arg in args if arg is not None])


class Query:
    """A checked query (see :func:`parse`); ``unknown`` is the sorted
    tuple of the variables it names that no host has."""

    def __init__(self, tree, unknown=()):
        self.tree = tree
        self.unknown = tuple(sorted(unknown))
        self.variables = _variables(tree)

    def passes(self, host_state):
        """True if the host passes the query."""
        bindings = {var.path: lookup(host_state, var.path)
                    for var in self.variables}
        return _truth(_top(_evaluate(self.tree, bindings)))

    def passes_all(self, table, rows):
        """Whether each of the table's ``rows`` passes, as an array."""
        return _evaluate_rows(self, table, np.asarray(rows, dtype=np.intp))


def parse(text):
    """The Query of a ``query`` hint; InvalidRequest if it is not one."""
    if not isinstance(text, str):
        _refuse('the query hint takes one JSON string')
    if len(text) > MAX_QUERY_LEN:
        _refuse('%d characters long; at most %d'
                % (len(text), MAX_QUERY_LEN))
    if _nesting(text) > MAX_QUERY_DEPTH:
        _refuse('nested deeper than %d levels' % MAX_QUERY_DEPTH)
    try:
        tree = json.loads(text)
    except ValueError as error:
        _refuse('not JSON: %s' % error)
    unknown = set()
    tree = _compile(tree, unknown)
    return Query(tree, unknown)


def _nesting(text):
    """How deep the JSON ``text`` nests lists and objects (brackets
    inside strings do not count); read before json.loads, which would
    recurse as deep as the text."""
    level = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in '[{':
            level += 1
            deepest = max(deepest, level)
        elif char in ']}':
            level -= 1
    return deepest


def _variables(node):
    found = {}
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, Var):
            found.setdefault(node.path, node)
        elif isinstance(node, Command):
            stack.extend(node.args)
    return list(found.values())


def lookup(host_state, path):
    """The value of a variable on a host, or None. Below the first name
    only dictionary keys, and the SERVICE_FIELDS of a service, are read."""
    value = getattr(host_state, path[0], None)
    for key in path[1:]:
        if isinstance(value, host_cache.ServiceInfo):
            value = (getattr(value, key, None) if key in SERVICE_FIELDS
                     else None)
        elif isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


# -- evaluation, one host at a time -------------------------------------------

def _compare(name, left, right):
    if name == 'in':
        return bool(left == right)
    try:
        return bool(_COMPARISONS[name](left, right))
    except TypeError:
        return False


def _apply(name, args):
    if name in ('not', 'or', 'and'):
        if name == 'not':
            return [not arg for arg in args]
        return any(args) if name == 'or' else all(args)
    if len(args) < 2:
        return False
    results = [_compare(name, args[0], arg) for arg in args[1:]]
    return any(results) if name == 'in' else all(results)


def _evaluate(node, bindings):
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Var):
        return bindings[node.path]
    args = [_evaluate(arg, bindings) for arg in node.args]
    return _apply(node.name, [arg for arg in args if arg is not None])


def _top(result):
    return any(result) if isinstance(result, list) else result


def _truth(value):
    return bool(value)


# -- evaluation over many hosts ----------------------------------------------

class _CannotVectorize(Exception):
    """The column-wise evaluation does not handle this; go host by host."""


class _List:
    """The result of ``not``: items that are Const or arrays."""

    __slots__ = ('items',)

    def __init__(self, items):
        self.items = items


def _is_number(value):
    return isinstance(value, (bool, int, float)) and not (
        isinstance(value, int) and abs(value) >= _EXACT_INT)


def _column_compare(name, left, right):
    """One comparison where at least one side is an array."""
    for side in (left, right):
        if isinstance(side, _List):
            raise _CannotVectorize()
        if isinstance(side, Const) and not _is_number(side.value):
            # Equal to no number; ordering a number and it: TypeError.
            return Const(False)
    left = left.value if isinstance(left, Const) else left
    right = right.value if isinstance(right, Const) else right
    if name == 'in':
        return np.asarray(left == right)
    return np.asarray(_COMPARISONS[name](left, right))


def _vector_truth(value):
    if isinstance(value, Const):
        return Const(bool(value.value))
    if isinstance(value, _List):
        return Const(bool(value.items))
    return value != 0


def _combine(values, any_of):
    """``any`` / ``all`` of Const and arrays."""
    result = Const(not any_of)
    for value in (_vector_truth(value) for value in values):
        if isinstance(value, Const):
            if value.value == any_of:
                return Const(any_of)
            continue
        if isinstance(result, Const):
            result = value
        else:
            result = (result | value) if any_of else (result & value)
    return result


def _negate(value):
    if isinstance(value, Const):
        return Const(not value.value)
    if isinstance(value, _List):
        return Const(not value.items)
    return value == 0


def _vector_apply(name, args):
    if name == 'not':
        return _List([_negate(value) for value in args])
    if name in ('or', 'and'):
        return _combine(args, name == 'or')
    if len(args) < 2:
        return Const(False)
    results = []
    for other in args[1:]:
        if isinstance(args[0], Const) and isinstance(other, Const):
            results.append(Const(_compare(name, args[0].value,
                                          other.value)))
        else:
            results.append(_column_compare(name, args[0], other))
    return _combine(results, name == 'in')


def _vector_evaluate(node, bindings):
    if isinstance(node, Const):
        return node
    if isinstance(node, Var):
        return bindings[node.path]
    args = [_vector_evaluate(arg, bindings) for arg in node.args]
    args = [arg for arg in args
            if not (isinstance(arg, Const) and arg.value is None)]
    return _vector_apply(node.name, args)


def _vector_result(tree, bindings, count):
    result = _vector_evaluate(tree, bindings)
    if isinstance(result, _List):
        result = _combine(result.items, True)
    result = _vector_truth(result)
    if isinstance(result, Const):
        return np.full(count, result.value, dtype=np.bool_)
    return np.asarray(result, dtype=np.bool_)


class _Bound:
    """A variable's value on a host, hashable so that hosts can be grouped
    by it (equal values evaluate alike)."""

    __slots__ = ('value', '_key')

    def __init__(self, value):
        self.value = value
        try:
            hash(value)
            self._key = (True, value)
        except TypeError:
            try:
                text = json.dumps(value, sort_keys=True, default=repr)
            except (TypeError, ValueError):
                text = repr(value)
            self._key = (False, type(value).__name__, text)

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, _Bound) and self._key == other._key


def _bound_of(path):
    def bound(host_state):
        return _Bound(lookup(host_state, path))
    return bound


def _each(query, table, rows):
    return np.fromiter((query.passes(table.states[row]) for row in rows),
                       dtype=np.bool_, count=len(rows))


def _columns_or_each(query, table, rows, bindings):
    try:
        return _vector_result(query.tree, bindings, len(rows))
    except _CannotVectorize:
        return _each(query, table, rows)


def _evaluate_rows(query, table, rows):
    """Numeric attributes are read as columns; hosts are grouped by the
    values of the other variables, and each group evaluated at once."""
    numeric, other = {}, []
    for var in query.variables:
        column = (table.attribute_column(var.path[0])
                  if len(var.path) == 1 else None)
        if column is None:
            other.append(var)
        else:
            numeric[var.path] = column
    if not other:
        return _columns_or_each(query, table, rows, {
            path: column[rows] for path, column in numeric.items()})
    codes, keys = [], []
    for var in other:
        var_codes, var_keys = table.grouped(('json_variable', var.path),
                                            _bound_of(var.path))
        codes.append(var_codes[rows])
        keys.append(var_keys)
    combos, inverse = np.unique(np.stack(codes, axis=1), axis=0,
                                return_inverse=True)
    inverse = inverse.reshape(-1)
    if numeric and len(combos) > max(8, len(rows) // 64):
        return _each(query, table, rows)
    answers = np.zeros(len(rows), dtype=np.bool_)
    order = np.argsort(inverse, kind='stable')
    ends = np.cumsum(np.bincount(inverse, minlength=len(combos)))
    start = 0
    for combo, end in zip(combos, ends):
        positions = order[start:end]
        start = end
        bindings = {var.path: Const(keys[number][code].value)
                    for number, (var, code) in enumerate(zip(other, combo))}
        if not numeric:
            scalar = {path: value.value for path, value in bindings.items()}
            answers[positions] = _truth(_top(_evaluate(query.tree, scalar)))
            continue
        members = rows[positions]
        bindings.update((path, column[members])
                        for path, column in numeric.items())
        answers[positions] = _columns_or_each(query, table, members,
                                              bindings)
    return answers
