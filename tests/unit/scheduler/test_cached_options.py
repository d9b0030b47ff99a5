"""scheduler.conf.cached: option values kept as attributes, never stale.

Against the real global CONF and oslo.config's own ways of changing a
value: overrides, defaults, and a config file re-read as SIGHUP does.
"""

import threading

from oslo_config import cfg

from scheduler import conf
from scheduler.conf import cached

CONF = conf.CONF


def test_a_value_is_read_once_then_kept(config):
    config.config(host_subset_size=3, group='filter_scheduler')
    options = cached.group('filter_scheduler')
    assert options.host_subset_size == 3
    # Kept as an attribute of the object the next request gets too.
    assert 'host_subset_size' in vars(options)
    assert cached.group('filter_scheduler') is options
    assert cached.group(None).service_down_time == CONF.service_down_time


def test_every_change_oslo_config_knows_of_is_seen(config):
    config.config(max_attempts=4, group='scheduler')
    assert cached.group('scheduler').max_attempts == 4
    config.config(max_attempts=7, group='scheduler')
    assert cached.group('scheduler').max_attempts == 7
    CONF.clear_override('max_attempts', group='scheduler')
    assert cached.group('scheduler').max_attempts == \
        CONF.scheduler.max_attempts == 3
    CONF.set_default('max_attempts', 5, group='scheduler')
    try:
        assert cached.group('scheduler').max_attempts == 5
    finally:
        CONF.set_default('max_attempts', 3, group='scheduler')
    assert cached.group('scheduler').max_attempts == 3


def test_a_config_file_read_again_is_seen(tmp_path):
    # A ConfigOpts of its own, re-read with mutate_config_files as the
    # daemon does on SIGHUP.
    own = cfg.ConfigOpts()
    own.register_opt(cfg.IntOpt('ratio', mutable=True), group='g')
    path = tmp_path / 'gantt.conf'
    path.write_text('[g]\nratio = 2\n')
    own(['--config-file', str(path)])
    groups = cached._Groups(own)
    assert groups.group('g').ratio == 2
    path.write_text('[g]\nratio = 9\n')
    own.mutate_config_files()
    assert groups.group('g').ratio == 9


def test_without_oslo_configs_cache_every_call_reads_afresh():
    class Plain:
        value = 1

    groups = cached._Groups(Plain)
    assert groups.group(None).value == 1
    Plain.value = 2
    assert groups.group(None).value == 2


def test_readers_in_threads_see_an_override_once_made(config):
    config.config(host_subset_size=1, group='filter_scheduler')
    seen = []
    stop = threading.Event()

    def read():
        while not stop.is_set():
            seen.append(cached.group('filter_scheduler').host_subset_size)

    threads = [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    config.config(host_subset_size=6, group='filter_scheduler')
    after = len(seen)
    while len(seen) < after + 100:
        pass
    stop.set()
    for thread in threads:
        thread.join()
    assert cached.group('filter_scheduler').host_subset_size == 6
    assert set(seen[after + 50:]) == {6}
