"""The filter on the rabbit driver's log takes only the records of
messages that could not be decoded; other failures go through."""

import logging
import sys

from kombu import exceptions as kombu_exceptions

from scheduler import undecodable_messages


class _Message:
    delivery_info = {'exchange': 'gantt', 'routing_key': 'scheduler'}
    content_type = 'application/json'
    body = b'{}'

    def __init__(self, payload):
        self._payload = payload

    @property
    def payload(self):
        if isinstance(self._payload, Exception):
            raise self._payload
        return self._payload


class _Consumer:
    queue_name = 'scheduler'

    def _callback(self, message, error):
        # As the driver's Consumer._callback: the failure is logged from
        # the frame that has the consumer and the message.
        try:
            raise error
        except Exception:
            return logging.LogRecord(
                'oslo.messaging._drivers.impl_rabbit', logging.ERROR,
                __file__, 1, undecodable_messages._DRIVER_MESSAGE, (),
                sys.exc_info())


def _record(payload, error):
    return _Consumer()._callback(_Message(payload), error)


def test_only_undecodable_messages_are_taken(caplog, monkeypatch):
    monkeypatch.setattr(undecodable_messages, 'DROPS',
                        undecodable_messages._Drops())
    filt = undecodable_messages.UndecodableFilter()
    decode_error = kombu_exceptions.DecodeError('bad utf-8')
    assert filt.filter(_record(decode_error, decode_error)) is False
    assert filt.filter(_record(b'raw', TypeError('not a dict'))) is False
    # A decoded message that failed later, and any other record: kept.
    assert filt.filter(_record({'method': 'x'}, KeyError('x'))) is True
    assert filt.filter(logging.LogRecord(
        'oslo.messaging._drivers.impl_rabbit', logging.ERROR, __file__, 1,
        'Something else', (), None)) is True
    # Two drops, one line.
    assert len([r for r in caplog.records
                if r.name == undecodable_messages.__name__]) == 1
