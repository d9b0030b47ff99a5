"""Explain a request: which filter removed which host and why, and how
each weigher ranked the hosts left.

:meth:`scheduler.drivers.filter_scheduler.FilterScheduler.explain` runs a
request through the code ``select_destinations`` runs (restrictions,
filters, weighers, and each instance consuming before the next), claiming
nothing, with a :class:`Recorder` watching. The reason a filter gives for
a host is what the filter logs when it refuses it, as Nova's filters do at
debug level; a filter that logs nothing is reported as refusing::

    explanation = driver.explain(ctxt, spec)
    for instance in explanation.instances:
        for step in instance.steps:
            print(step.name, step.before, '->', step.after, step.notes)
            for removed in step.removed or ():
                print('  ', removed.host, removed.reason)
        for entry in instance.ranking:
            print(entry.host, entry.weight, dict(entry.parts))
    print(explanation.error)      # NoValidHost's text, or None
"""

import collections
import logging
import threading

import numpy as np

Removed = collections.namedtuple('Removed', 'host node reason cell',
                                 defaults=('default',))
Removed.__doc__ = """A host a filter removed, and the filter's reason;
``cell``: the name of the host's cell (``default`` without cells)."""

FilterStep = collections.namedtuple(
    'FilterStep', 'name before after removed notes', defaults=((),))
FilterStep.__doc__ = """One step of filtering: hosts before and after it.

``removed`` lists the :data:`Removed` hosts of a filter; it is None for
the other steps (``ignore_hosts``, the earlier instances of the request...).
``notes`` holds what the filter says about the request as a whole (its
optional ``request_notes(spec)``), such as a JsonFilter query's unknown
variables, whether or not it removed any host.
"""

Ranked = collections.namedtuple('Ranked', 'host node weight parts cell',
                                defaults=('default',))
Ranked.__doc__ = """One host of a ranking, best first: its total weight,
``parts``, ``[(weigher name, multiplier * normalized weight)]``, and its
cell's name."""

InstanceExplanation = collections.namedtuple(
    'InstanceExplanation', 'index steps ranking chosen passing',
    defaults=(None,))
InstanceExplanation.__doc__ = """The filtering and ranking of one instance
of the request; ``chosen`` is ``(host, node)``, or None if none was;
``passing``: ``{cell name: hosts that passed every filter}``, every cell
of the candidate hosts named (0 when none of its hosts passed)."""

_CAPTURE_LOCK = threading.Lock()


class Explanation:
    """What :meth:`FilterScheduler.explain` found."""

    def __init__(self, total, instances, error=None):
        self.total = total
        self.instances = instances
        self.error = error

    @property
    def placed(self):
        return self.error is None


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        try:
            self.messages.append(record.getMessage())
        except Exception:
            self.messages.append(str(record.msg))


def reject_reason(filter_obj, host_state, spec):
    """Why ``filter_obj`` refuses ``host_state``: what it logs when it
    says no, else a plain statement.

    Logging is routed to a capture for the duration of the call, so this
    is meant for ``gantt-manage explain``, not a busy scheduler.
    """
    capture = _Capture()
    root = logging.getLogger()
    with _CAPTURE_LOCK:
        handlers, level = root.handlers[:], root.level
        root.handlers = [capture]
        root.setLevel(logging.DEBUG)
        try:
            passed = filter_obj.host_passes(host_state, spec)
        except Exception as error:
            return 'the filter failed: %s: %s' % (type(error).__name__,
                                                  error)
        finally:
            root.handlers = handlers
            root.setLevel(level)
    if passed:
        return ('removed by the batch path, which its per-host path '
                'does not confirm')
    text = '; '.join(message for message in capture.messages if message)
    return text or 'refused by %s' % type(filter_obj).__name__


def request_notes(filter_obj, spec):
    """The filter's notes on the request (a tuple of strings), if it has
    a ``request_notes(spec)`` method; a failure there is a note too."""
    notes_of = getattr(filter_obj, 'request_notes', None)
    if notes_of is None:
        return ()
    try:
        return tuple(notes_of(spec))
    except Exception as error:
        return ('could not say: %s: %s' % (type(error).__name__, error),)


def _passing(host_table, entries):
    """``{cell name: ranked hosts}``, naming every cell of the table."""
    passing = dict.fromkeys(sorted({state.cell_name
                                    for state in host_table.states}), 0)
    for entry in entries:
        passing[entry.cell] = passing.get(entry.cell, 0) + 1
    return passing


class Recorder:
    """Watches one request (the ``observer`` of the filter scheduler's
    request) and builds its :class:`Explanation`."""

    def __init__(self, weight_handler):
        self.weight_handler = weight_handler
        self.instances = []
        self._pending = []

    def filtered(self, filter_obj, host_table, spec, before, after):
        removed = []
        for row in np.flatnonzero(before & ~after):
            state = host_table.states[row]
            removed.append(Removed(state.host, state.nodename,
                                   reject_reason(filter_obj, state, spec),
                                   state.cell_name))
        self._pending.append(FilterStep(
            type(filter_obj).__name__, int(np.count_nonzero(before)),
            int(np.count_nonzero(after)), removed,
            request_notes(filter_obj, spec)))

    def ranked(self, index, weighers, host_table, spec, result, ranking):
        filter_steps, self._pending = self._pending, []
        others = len(result.steps) - len(filter_steps)
        steps = [FilterStep(step.name, step.before, step.after, None)
                 for step in result.steps[:others]] + filter_steps
        parts = [(type(weigher).__name__, weighted) for weigher, weighted
                 in self.weight_handler.contributions(
                     weighers, host_table, ranking.rows, spec)]
        entries = []
        for position in np.argsort(-ranking.weights, kind='stable'):
            state = host_table.states[ranking.rows[position]]
            entries.append(Ranked(
                state.host, state.nodename, float(ranking.weights[position]),
                [(name, float(values[position])) for name, values in parts],
                state.cell_name))
        self.instances.append(InstanceExplanation(
            index, steps, entries, None, _passing(host_table, entries)))

    def placed(self, index, host_state):
        self.instances[index] = self.instances[index]._replace(
            chosen=(host_state.host, host_state.nodename))

    def explanation(self, total, error=None):
        return Explanation(total, list(self.instances),
                           None if error is None else str(error))
