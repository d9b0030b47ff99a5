"""Transport URLs oslo.messaging would misread are refused in one line
naming ``[DEFAULT] transport_url``, the fix, and no password; no
transport is made."""

import pytest

from scheduler import config as gantt_config
from scheduler import exception
from scheduler import rpc

SECRET = 's3cret'


def _refusal(config, url):
    gantt_config.register_opts()
    config.config(transport_url=url)
    with pytest.raises(exception.ConfigError) as caught:
        rpc.init(gantt_config.CONF)
    assert rpc.TRANSPORT is None
    message = str(caught.value)
    assert SECRET not in message, message
    assert 'Traceback' not in message
    return message


def test_a_password_in_the_query_names_the_option_and_the_user_info(config):
    message = _refusal(config,
                       'rabbit://guest@127.0.0.1:1/?password=%s' % SECRET)
    assert message == (
        "Configuration error: [DEFAULT] transport_url "
        "rabbit://guest@127.0.0.1:1/?password=***: 'password' in its query "
        "is no option of [oslo_messaging_rabbit] (the query of a transport "
        "URL sets that group's options); oslo.messaging reads a password "
        "from the URL's user info only (rabbit://USER:PASSWORD@HOST:PORT/, "
        "with a '/' in the password percent-encoded as %2F)")


def test_an_unknown_query_key_is_named(config):
    message = _refusal(config, 'rabbit://guest:%s@127.0.0.1:1/?nope=1'
                       % SECRET)
    assert "'nope' in its query is no option of [oslo_messaging_rabbit]" \
        in message
    assert 'user info only' not in message


@pytest.mark.parametrize('password, raw, fix', [
    ('pa/' + SECRET, "a raw '/', which ends", "percent-encode it ('/' as "
     "%2F)"),
    ('pa?' + SECRET, "a raw '?', which ends", "'?' as %3F"),
    ('p#a/' + SECRET, "a raw '/' and '#', which end",
     "percent-encode them ('/' as %2F, '#' as %23)"),
])
def test_a_raw_slash_in_the_password_says_to_percent_encode_it(
        config, password, raw, fix):
    message = _refusal(config, 'rabbit://guest:%s@127.0.0.1:1/' % password)
    assert message.startswith(
        'Configuration error: [DEFAULT] transport_url '
        'rabbit://guest:***@127.0.0.1:1/: the password holds %s the host '
        'part of a URL' % raw), message
    assert fix in message, message


def test_a_port_that_is_no_number_is_a_config_error(config):
    message = _refusal(config, 'rabbit://guest:%s@127.0.0.1:x1/' % SECRET)
    assert message.startswith(
        'Configuration error: [DEFAULT] transport_url '
        'rabbit://guest:***@127.0.0.1:x1/: oslo.messaging cannot parse it'), \
        message


@pytest.mark.parametrize('url', [
    'rabbit://guest:pa%2Fss@127.0.0.1:1/',
    'rabbit://guest:guest@127.0.0.1:1/vhost?ssl=0',
    'rabbit://guest:guest@127.0.0.1:1/v@h/x',
])
def test_well_formed_urls_make_a_transport(config, url):
    gantt_config.register_opts()
    config.config(transport_url=url)
    try:
        assert rpc.init(gantt_config.CONF) is rpc.TRANSPORT
    finally:
        rpc.cleanup()
