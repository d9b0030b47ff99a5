"""gantt-manage broker permissions: the rabbitmqctl commands of this
configuration's deployment."""

from scheduler import broker_permissions


def test_prints_both_commands_per_service(conf_file, run):
    conf_file.write_text('[DEFAULT]\ncontrol_exchange = cloud\n'
                         '[oslo_messaging_notifications]\n'
                         'driver = messagingv2\n[notifications]\n'
                         'notification_format = versioned\n')
    result = run('broker', 'permissions', '--vhost', '/gantt', '--user',
                 'gantt-compute=compute')
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert lines[0] == ('# Least RabbitMQ permissions of each Gantt '
                        'service on vhost /gantt, control exchange cloud; '
                        'notifications: versioned_notifications.')
    perms = broker_permissions.for_service(
        'gantt-compute', 'cloud', ('versioned_notifications',))
    assert lines[1] == ("rabbitmqctl set_permissions -p '/gantt' 'compute' "
                        "'%s' '%s' '%s'" % (perms.configure, perms.write,
                                            perms.read))
    assert lines[2] == ("rabbitmqctl set_topic_permissions -p '/gantt' "
                        "'compute' 'cloud' '%s' '%s'" % (perms.topic_write,
                                                         perms.topic_read))
    assert len(lines) == 1 + 2 * len(broker_permissions.ROLES)


def test_without_notifications_says_none(run):
    result = run('broker', 'permissions', '--vhost', 'v')
    assert result.code == 0, result
    assert result.out.splitlines()[0].endswith('notifications: none.')
    assert 'notifications' not in result.out.splitlines()[1]


def test_a_bad_user_pair_is_a_usage_error(run):
    result = run('broker', 'permissions', '--vhost', 'v', '--user',
                 'gantt-api=x')
    assert result.code == 2
    assert ("argument --user: expected BINARY=USER with BINARY one of "
            "gantt-compute, gantt-conductor, gantt-manage, gantt-scheduler, "
            "got 'gantt-api=x'") in result.err
    assert run('broker', 'permissions').code == 2
