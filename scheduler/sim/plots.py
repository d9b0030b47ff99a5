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
"""

import os

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
