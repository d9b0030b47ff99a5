"""PNG pictures of simulation runs (matplotlib, Agg backend).

:func:`draw_all` writes, into a directory, for one or more labelled
:class:`~scheduler.sim.metrics.Result` (side by side when there are
several, as ``gantt-sim --compare`` gives):

``utilisation.png``
    CPU, RAM and disk utilisation over simulated hours, a dotted line at
    the first NoValidHost;
``heatmap.png``
    every host's RAM fill (hosts averaged in consecutive bins at large
    scale) over time: spreading shows as an even shade rising, packing
    as hosts filling one band at a time;
``stranded.png``
    free capacity on hosts too full for one instance of the most common
    flavor, as a share of the cloud's capacity, over time;
``latency.png``
    the histogram of decision latencies (milliseconds, log scale).

matplotlib is imported when drawing, so that the rest of the simulator
runs without it (``pip install gantt[sim]`` brings it)::

    plots.draw_all('out', [('spread', result_a), ('pack', result_b)])

``gantt-sim`` draws through a :class:`Plotter` on a machine of several
CPUs: a process forked before the runs imports matplotlib while they
replay (about a second), then draws the pictures two at a time.
"""

import multiprocessing
import os
import signal
import sys
import traceback

from scheduler.sim import metrics

FILES = ('utilisation.png', 'heatmap.png', 'stranded.png', 'latency.png')


def _pyplot():
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    return pyplot


def _figure(pyplot, runs, height=3.8):
    """One panel per run, titled by the run's label (the configuration
    file's name), under a title saying what was simulated."""
    figure, axes = pyplot.subplots(
        1, len(runs), figsize=(5.5 * len(runs) + 0.5, height),
        squeeze=False, sharey=True, layout='constrained')
    first = runs[0][1]
    figure.suptitle('gantt-sim: %d hosts, %d requests, %.0f simulated '
                    'hours' % (first.hosts, first.requests,
                               first.horizon / 3600.0))
    return figure, axes[0]


def _hours(result):
    return result.times / 3600.0


def _mark_first_failure(axis, result):
    if result.first_no_valid_host is not None:
        axis.axvline(result.first_no_valid_host / 3600.0, color='grey',
                     linestyle=':', label='first NoValidHost')


def _save(pyplot, figure, directory, name):
    path = os.path.join(directory, name)
    figure.savefig(path, dpi=90)
    pyplot.close(figure)
    return path


def utilisation(pyplot, runs, directory):
    figure, axes = _figure(pyplot, runs)
    for axis, (label, result) in zip(axes, runs):
        for column, name in enumerate(metrics.LABELS):
            axis.plot(_hours(result), 100 * result.utilisation[:, column],
                      label=name)
        _mark_first_failure(axis, result)
        axis.set_title('%s: utilisation' % label)
        axis.set_xlabel('simulated hours')
        axis.set_ylim(0, 100)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel('% of capacity used')
    axes[0].legend(loc='upper left')
    return _save(pyplot, figure, directory, 'utilisation.png')


def heatmap(pyplot, runs, directory):
    figure, axes = _figure(pyplot, runs, height=4.4)
    image = None
    for axis, (label, result) in zip(axes, runs):
        image = axis.imshow(
            100 * result.heat.T, aspect='auto', origin='lower',
            cmap='viridis', vmin=0, vmax=100, interpolation='nearest',
            extent=(0, result.horizon / 3600.0, 0, result.heat.shape[1]))
        axis.set_title('%s: RAM fill per host' % label)
        axis.set_xlabel('simulated hours')
    bins, hosts = runs[0][1].heat.shape[1], runs[0][1].hosts
    if bins < hosts:
        axes[0].set_ylabel('hosts in cloud order (%d bins of ~%d)'
                           % (bins, round(hosts / bins)))
    else:
        axes[0].set_ylabel('hosts in cloud order')
    # One colour scale for every panel: 0-100% of the host's RAM.
    figure.colorbar(image, ax=list(axes), label='% of the host\'s RAM used')
    return _save(pyplot, figure, directory, 'heatmap.png')


def stranded(pyplot, runs, directory):
    figure, axes = _figure(pyplot, runs)
    for axis, (label, result) in zip(axes, runs):
        for column, name in enumerate(metrics.LABELS):
            axis.plot(_hours(result), 100 * result.stranded[:, column],
                      label=name)
        _mark_first_failure(axis, result)
        axis.set_title('%s: stranded capacity' % label)
        axis.set_xlabel('simulated hours')
        axis.grid(alpha=0.3)
    axes[0].set_ylabel('% of capacity free but unusable')
    axes[0].legend(loc='upper left')
    return _save(pyplot, figure, directory, 'stranded.png')


def latency(pyplot, runs, directory):
    import numpy as np
    figure, axes = _figure(pyplot, runs)
    values = [1000 * np.asarray(result.latencies) for _l, result in runs]
    low = max(1e-3, min((v.min() for v in values if len(v)), default=1e-3))
    high = max((v.max() for v in values if len(v)), default=1.0)
    edges = np.geomspace(low, max(high, low * 10), 60)
    for axis, (label, result), data in zip(axes, runs, values):
        axis.hist(data, bins=edges, color='tab:blue')
        axis.set_xscale('log')
        for fraction, style in ((0.5, '--'), (0.99, ':')):
            value = metrics.percentile(data, fraction)
            axis.axvline(value, color='black', linestyle=style,
                         label='p%d %.1f ms' % (round(100 * fraction),
                                                value))
        axis.set_title('%s: decision latency' % label)
        axis.set_xlabel('ms (log scale)')
        axis.legend(loc='upper right')
    axes[0].set_ylabel('decisions')
    return _save(pyplot, figure, directory, 'latency.png')


def draw_all(directory, runs):
    """Write the pictures of ``runs`` (``[(label, Result)]``) into
    ``directory``; their paths."""
    pyplot = _pyplot()
    os.makedirs(directory, exist_ok=True)
    return [draw(pyplot, runs, directory)
            for draw in (utilisation, heatmap, stranded, latency)]


# The pictures each of a Plotter's two processes draws (about the same
# time each: the latency histogram is the slowest).
_HALVES = ((utilisation, latency), (heatmap, stranded))


class PlotsFailed(Exception):
    """The Plotter's processes did not draw every picture."""


def _draw_half(pyplot, runs, directory, drawings):
    for draw in drawings:
        draw(pyplot, runs, directory)


def _plotter(receive, send, parents, directory):
    """The Plotter's process: matplotlib imported at once, then the
    runs drawn when they come (nothing if the pipe closes first).
    ``parents``: the parent's ends of the pipes, which the fork copied
    (held here, the runs' pipe would never close)."""
    for end in parents:
        end.close()
    # A Ctrl-C is the command's to act on: it closes the pipe.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pyplot = _pyplot()
    try:
        runs = receive.recv()
    except EOFError:
        return
    os.makedirs(directory, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _draw_half(pyplot, runs, directory, _HALVES[1])
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    try:
        _draw_half(pyplot, runs, directory, _HALVES[0])
    finally:
        _pid, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise PlotsFailed('drawing %s failed (exit code %d)' % (
            ', '.join(draw.__name__ for draw in _HALVES[1]), code))
    send.send('drawn')


class Plotter:
    """Draws :func:`draw_all`'s pictures into ``directory`` from a
    process of its own, forked here (call it before the runs, with no
    other thread running): it imports matplotlib meanwhile, on another
    CPU. :meth:`draw` gives it the runs and waits; :meth:`close` ends
    it if it was not used."""

    def __init__(self, directory):
        self.directory = directory
        context = multiprocessing.get_context('fork')
        # Whatever is buffered would be written again as it exits.
        sys.stdout.flush()
        sys.stderr.flush()
        their_runs, self._runs = context.Pipe(duplex=False)
        self._done, their_done = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_plotter, name='gantt-sim plots',
            args=(their_runs, their_done, (self._runs, self._done),
                  directory))
        self._process.start()
        their_runs.close()
        their_done.close()

    def draw(self, runs):
        """Draw ``runs`` (``[(label, Result)]``): the paths, as
        :func:`draw_all` gives them; PlotsFailed if a picture was not
        drawn."""
        try:
            self._runs.send(runs)
            self._runs.close()
            self._done.recv()
        except (BrokenPipeError, EOFError):
            # It ended before it read them, or before it drew them all.
            self._process.join()
            raise PlotsFailed('the pictures were not all drawn (the '
                              'drawing process ended with exit code %s)'
                              % self._process.exitcode)
        return [os.path.join(self.directory, name) for name in FILES]

    def close(self):
        self._runs.close()
        self._done.close()
        self._process.join()
