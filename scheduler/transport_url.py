"""Transport URLs that oslo.messaging would misread, refused in one line.

oslo.messaging reads ``[DEFAULT] transport_url`` with urllib, so a raw
``/``, ``?`` or ``#`` in a user name or password ends the host part of
the URL early: the port becomes a piece of the password, or the broker
is looked for at a host named after the user. Its drivers also take the
query of the URL as overrides of their own options
(``?heartbeat_timeout_threshold=30`` sets that option of
``[oslo_messaging_rabbit]``), and a key that is no option of theirs
(``?password=...``, say) makes the driver fail with oslo.config's
NoSuchOptError, a traceback. Both become a ConfigError that names the
option, shows the URL with its secrets masked and says how to fix it::

    from scheduler import transport_url
    transport_url.check(url)                    # before get_rpc_transport
    try:
        transport = messaging.get_rpc_transport(conf, url=url)
    except cfg.NoSuchOptError as error:
        raise transport_url.query_error(url, error)

which reads, for ``rabbit://guest@mq:5672/?password=s3cret``::

    Configuration error: [DEFAULT] transport_url
    rabbit://guest@mq:5672/?password=***: 'password' in its query is no
    option of [oslo_messaging_rabbit] ...
"""

import re
import urllib.parse

from scheduler import config
from scheduler import exception

OPTION = '[DEFAULT] transport_url'

# Characters that end urllib's host part when raw in the user info.
_ENDS_HOST_PART = '/?#'

_USERINFO_HINT = ("oslo.messaging reads a password from the URL's user "
                  "info only (rabbit://USER:PASSWORD@HOST:PORT/, with a "
                  "'/' in the password percent-encoded as %2F)")


def _userinfo(url):
    """The raw user info of ``url``: what precedes its last '@'."""
    rest = url.split('://', 1)[-1]
    return rest[:rest.rfind('@')] if '@' in rest else ''


def _shown(url):
    """``url`` for a message when its parser would misread it: the user
    name kept, the rest of the user info masked, for a URL of one host;
    its scheme alone otherwise."""
    userinfo = _userinfo(url)
    if '://' not in url or ':' not in userinfo or ',' in userinfo:
        return config.redact_transport_url(url)
    scheme = url.split('://', 1)[0]
    location = url.split('://', 1)[1][len(userinfo) + 1:]
    return '%s://%s:%s@%s' % (scheme, userinfo.split(':', 1)[0],
                              config.MASK, config.mask_secrets(location))


def check(url, option=OPTION):
    """Raise ConfigError if the user info of ``url`` holds a raw character
    that ends urllib's host part (see the module docstring)."""
    if not isinstance(url, str):
        return
    rest = url.split('://', 1)[-1]
    if '@' in re.split('[%s]' % re.escape(_ENDS_HOST_PART), rest, 1)[0]:
        return   # urllib's host part holds the user info: read whole
    user, _, password = _userinfo(url).partition(':')
    for part, text in (('password', password), ('user name', user)):
        raw = [char for char in _ENDS_HOST_PART if char in text]
        if raw:
            raise exception.ConfigError(reason=(
                "%s %s: the %s holds a raw %s, which %s the host part of "
                "a URL: percent-encode %s (%s)" % (
                    option, _shown(url), part,
                    ' and '.join(repr(char) for char in raw),
                    'ends' if len(raw) == 1 else 'end',
                    'it' if len(raw) == 1 else 'them',
                    ', '.join('%r as %s' % (char, urllib.parse.quote(
                        char, '')) for char in raw))))


def query_error(url, error, option=OPTION):
    """The ConfigError for ``error``, the NoSuchOptError a driver raised
    for a key of the query of ``url`` that is none of its options."""
    group = getattr(error.group, 'name', error.group) or 'DEFAULT'
    reason = ("%s %s: %r in its query is no option of [%s] (the query of "
              "a transport URL sets that group's options)" % (
                  option, config.redact_transport_url(url), error.opt_name,
                  group))
    if config.is_secret_key(error.opt_name):
        reason += '; ' + _USERINFO_HINT
    return exception.ConfigError(reason=reason)


def parse_error(url, error, option=OPTION):
    """The ConfigError for ``error``, a ValueError of oslo.messaging's (or
    urllib's) parser, with any piece of a password in it masked."""
    return exception.ConfigError(reason='%s %s: oslo.messaging cannot '
                                 'parse it: %s' % (
                                     option, _shown(url),
                                     config.scrub(str(error), [url])))
