"""Secrets stay out of logs; the option groups read as nova.conf does."""

import logging


from scheduler import conf
from scheduler import config

CONF = conf.CONF


def test_logged_options_hide_passwords(caplog, tmp_path):
    conf_file = tmp_path / 'gantt.conf'
    conf_file.write_text(
        '[DEFAULT]\n'
        'transport_url = rabbit://gantt:rabbitpw@mq:5672/\n'
        '[database]\n'
        'connection = postgresql+psycopg2://gantt:dbpw@db/gantt\n')
    config.register_opts()
    CONF(['--config-file', str(conf_file)], project='gantt')
    try:
        assert CONF.database.connection.endswith('dbpw@db/gantt')
        with caplog.at_level(logging.DEBUG):
            CONF.log_opt_values(logging.getLogger('test'), logging.DEBUG)
        text = caplog.text
        assert 'transport_url' in text and 'connection' in text
        assert 'rabbitpw' not in text
        assert 'dbpw' not in text
    finally:
        CONF.reset()
        CONF.clear()


def test_nova_defaults():
    assert CONF.scheduler.driver == 'filter_scheduler'
    assert CONF.scheduler.max_attempts == 3
    assert CONF.scheduler.discover_hosts_in_cells_interval == -1
    assert CONF.scheduler.periodic_task_interval == 60
    assert CONF.scheduler.workers is None
    assert CONF.filter_scheduler.host_subset_size == 1
    assert CONF.filter_scheduler.shuffle_best_same_weighed_hosts is False
    assert CONF.filter_scheduler.ram_weight_multiplier == 1.0
    assert CONF.report_interval == 10
    assert CONF.service_down_time == 60


def test_mutable_options_are_marked():
    group = CONF.filter_scheduler
    for name in ('enabled_filters', 'weight_classes', 'host_subset_size',
                 'ram_weight_multiplier', 'cpu_weight_multiplier',
                 'disk_weight_multiplier'):
        assert CONF._get_opt_info(name, 'filter_scheduler')['opt'].mutable, \
            name
    assert group is not None


def test_exchange_default_survives_a_config_reset():
    config.register_opts()
    CONF.reset()
    assert CONF.control_exchange == 'gantt'


def test_only_py_amqp_s_cancel_on_close_warning_is_dropped():
    import logging as std_logging

    logger = std_logging.getLogger('amqp')
    config.quiet_cancel_on_close()
    seen = []

    class Keep(std_logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    handler = Keep()
    logger.addHandler(handler)
    try:
        logger.warning('Received method %s during closing channel %s. '
                       'This method will be ignored', (60, 30), 1)
        logger.warning('Received method %s during closing channel %s. '
                       'This method will be ignored', (60, 40), 1)
        logger.warning('Socket closed')
    finally:
        logger.removeHandler(handler)
    assert seen == ['Received method (60, 40) during closing channel 1. '
                    'This method will be ignored', 'Socket closed']


def test_the_scheduler_defaults_to_few_rpc_threads_a_file_still_wins(
        tmp_path):
    from scheduler.cmd import scheduler as scheduler_cmd

    config.register_opts()
    # oslo.messaging's: the conductor's builds wait on RPC replies.
    assert CONF.executor_thread_pool_size == 64
    scheduler_cmd.set_defaults()
    try:
        assert CONF.executor_thread_pool_size == scheduler_cmd.RPC_THREADS
        assert scheduler_cmd.RPC_THREADS == 4
        conf_file = tmp_path / 'gantt.conf'
        conf_file.write_text('[DEFAULT]\nexecutor_thread_pool_size = 12\n')
        CONF(['--config-file', str(conf_file)], project='gantt')
        assert CONF.executor_thread_pool_size == 12
    finally:
        CONF.reset()
        CONF.clear()
    assert CONF.executor_thread_pool_size == 64
