"""[filter_scheduler] options of instance tracking and server groups."""

import pytest

from scheduler import conf
from scheduler import config

CONF = conf.CONF


def test_nova_defaults():
    options = CONF.filter_scheduler
    assert options.track_instance_changes is True
    assert CONF.scheduler_instance_sync_interval == 120
    assert options.soft_affinity_weight_multiplier == 1.0
    assert options.soft_anti_affinity_weight_multiplier == 1.0


def test_nova_conf_default_group_names_are_read(tmp_path):
    conf_file = tmp_path / 'gantt.conf'
    conf_file.write_text('[DEFAULT]\n'
                         'scheduler_instance_sync_interval = 30\n'
                         'scheduler_tracks_instance_changes = false\n')
    config.register_opts()
    CONF(['--config-file', str(conf_file)], project='gantt')
    try:
        assert CONF.scheduler_instance_sync_interval == 30
        assert CONF.filter_scheduler.track_instance_changes is False
    finally:
        CONF.reset()
        CONF.clear()


def test_gantt_s_earlier_group_of_the_sync_interval_is_read(tmp_path):
    conf_file = tmp_path / 'gantt.conf'
    conf_file.write_text('[filter_scheduler]\n'
                         'scheduler_instance_sync_interval = 45\n')
    config.register_opts()
    CONF(['--config-file', str(conf_file)], project='gantt')
    try:
        assert CONF.scheduler_instance_sync_interval == 45
    finally:
        CONF.reset()
        CONF.clear()


@pytest.mark.parametrize('name', ['soft_affinity_weight_multiplier',
                                  'soft_anti_affinity_weight_multiplier'])
def test_soft_multipliers_are_mutable_and_not_negative(name, config):
    opt = CONF._get_opt_info(name, 'filter_scheduler')['opt']
    assert opt.mutable
    with pytest.raises(ValueError):
        config.config(**{name: -1.0, 'group': 'filter_scheduler'})
