"""Which exchange an RPC request may come through (the functional test
tests/functional/test_broker_permissions.py sends them on a broker)."""

import types

import oslo_messaging as messaging

from scheduler import rpc_routes

TARGET = messaging.Target(topic='scheduler', server='s1')
FANOUT = frozenset({'update_instance_info'})


def incoming(method, exchange=None):
    """An RPC incoming message as the rabbit driver makes it: the
    request's dict, with the broker's delivery info on its raw
    message (none: a transport that does not say)."""
    class Message(dict):
        pass
    message = Message(method=method)
    if exchange is not None:
        message._raw_message = types.SimpleNamespace(
            delivery_info={'exchange': exchange, 'routing_key': 'x'})
    return types.SimpleNamespace(message=message)


def refusal(message, target=TARGET):
    return rpc_routes.refusal(target, 'gantt', FANOUT, message)


def test_the_control_exchange_carries_any_method():
    assert refusal(incoming('select_destinations', 'gantt')) is None
    own = messaging.Target(topic='scheduler', exchange='nova')
    assert refusal(incoming('select_destinations', 'nova'), own) is None
    assert refusal(incoming('select_destinations', 'gantt'), own) == (
        'it came through exchange gantt, not the control exchange nova')


def test_the_default_exchange_carries_nothing():
    assert refusal(incoming('select_destinations', '')) == (
        'it came through exchange amq.default, not the control exchange '
        'gantt')
    assert refusal(incoming('update_instance_info', 'amq.topic')) == (
        'it came through exchange amq.topic, not the control exchange '
        'gantt')


def test_the_fanout_carries_only_the_fanout_methods():
    assert refusal(incoming('update_instance_info',
                            'scheduler_fanout')) is None
    assert refusal(incoming('select_destinations', 'scheduler_fanout')) \
        == 'select_destinations is not a fanout method of topic scheduler'
    # Another topic's fanout is no way in either.
    assert refusal(incoming('update_instance_info', 'compute_fanout')) \
        .startswith('it came through exchange compute_fanout')


def test_a_transport_that_does_not_say_is_not_checked():
    assert refusal(incoming('select_destinations')) is None


def test_fanout_methods_of_endpoints():
    endpoints = [types.SimpleNamespace(fanout_methods={'a'}), object(),
                 types.SimpleNamespace(fanout_methods=('b',))]
    assert rpc_routes.fanout_methods(endpoints) == {'a', 'b'}
