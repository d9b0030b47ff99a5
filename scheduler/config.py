"""Process start-up: parse the command line and config files, set up logs.

Every console script calls :func:`parse_args` first::

    from scheduler import config
    config.parse_args(sys.argv, description='The Gantt scheduler')

Secrets never reach the logs: ``transport_url`` and ``[database]
connection`` are registered ``secret=True`` (masked by ``log_opt_values``),
and every log line or error message that names a URL or quotes a driver's
error goes through one of three functions, built on the libraries that
parse those URLs in the first place::

    config.redact_database_url(CONF.database.connection)
    # 'postgresql+psycopg2://gantt:***@db/gantt?sslpassword=***'
    config.redact_transport_url(CONF.transport_url)
    # 'rabbit://a:***@mq1:5672,b:***@mq2:5672/'
    config.mask_secrets(str(error))
    # free text: 'password=***', and 'scheme://user:***@host' for URLs in it

A URL that its library cannot parse, or parses into something that might
hold part of a password (a raw ``@`` in a database password; a raw ``,``
``/`` ``?`` or ``#`` in a transport URL's), is shown as its scheme alone
(``'rabbit://<unparseable URL>'``), never echoed.
"""

import logging as std_logging
import re
import urllib.parse

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts
from oslo_service import opts as service_opts
from oslo_utils import netutils
from oslo_utils import strutils
import sqlalchemy as sa

from scheduler import conf

CONF = conf.CONF

_DEFAULT_LOG_LEVELS = [
    'amqp=WARN', 'amqplib=WARN', 'kombu=WARN', 'oslo.messaging=INFO',
    'oslo_messaging=INFO', 'sqlalchemy=WARN', 'stevedore=WARN',
    'alembic=WARN', 'cotyledon=WARN', 'oslo_service=INFO', 'urllib3=WARN',
]

# Nova's default (oslo.service's is 60): the time a stopping service
# gives its in-flight requests.
GRACEFUL_SHUTDOWN_TIMEOUT = 180

_registered = False


def set_defaults():
    """Gantt's defaults of options the libraries own: the log levels of
    the libraries' loggers, the exchange ``gantt``, and Nova's
    ``graceful_shutdown_timeout``. Changes the options' own defaults (not
    CONF-level defaults, which CONF.reset() would drop). Also the
    ``oslo.config.opts.defaults`` hook, so that the generated sample shows
    what the daemons use."""
    logging.set_defaults(default_log_levels=_DEFAULT_LOG_LEVELS)
    messaging.set_transport_defaults(control_exchange='gantt')
    service_opts.set_service_opts_defaults(
        CONF, graceful_shutdown_timeout=GRACEFUL_SHUTDOWN_TIMEOUT)


def register_opts():
    """Register the options Gantt reads but does not own: oslo.log's, and
    oslo.messaging's ``[DEFAULT]`` ones (transport_url...), so that they can
    be read and overridden before the transport exists. Gantt's exchange is
    ``gantt``. Safe to call more than once."""
    global _registered
    if _registered:
        return
    logging.register_options(CONF)
    set_defaults()
    for group, opts in messaging_opts.list_opts():
        if group is None:
            CONF.register_opts(opts)
    _registered = True


def parse_args(argv, description=None, default_config_files=None,
               cli_opts=None, version=None):
    """Load options from argv[1:] and the config files; set up logging.

    ``version``: what ``--version`` prints (the option exists only when
    one is given), as Nova's commands pass theirs to oslo.config."""
    register_opts()
    if cli_opts:
        CONF.register_cli_opts(cli_opts)
    CONF(argv[1:], project='gantt', prog=argv[0].rsplit('/', 1)[-1],
         description=description, default_config_files=default_config_files,
         version=version)
    logging.setup(CONF, 'gantt')
    quiet_cancel_on_close()


class _CancelOnCloseFilter(std_logging.Filter):
    """Drops py-amqp's "Received method (60, 30) during closing channel"
    WARNING, and only it.

    When an RPC server stops, oslo.messaging deletes its fanout queue
    ("[connection close] Deleting fanout queue", at DEBUG) while its own
    consumer is still on that queue; RabbitMQ then tells that consumer the
    queue is gone (basic.cancel, method 60/30), on the channel being
    closed, and py-amqp warns that it ignores it. Every clean stop of
    every daemon printed one per RPC server: nothing went wrong.
    """

    def filter(self, record):
        return not (record.getMessage().startswith(
            'Received method (60, 30) during closing channel'))


_CANCEL_FILTER = _CancelOnCloseFilter()


def quiet_cancel_on_close():
    std_logging.getLogger('amqp').addFilter(_CANCEL_FILTER)


MASK = '***'

# Query-string keys hidden beyond those oslo.utils already knows
# (``password``, ``token``, ``secret``...): ODBC's spellings.
_EXTRA_SECRET_KEYS = ('pwd', 'passwd')

# Characters that end the user-info part of a URL for urllib (and so for
# oslo.messaging): a password with one of these raw is misread.
_NETLOC_END = '/?#'

_SCHEME = re.compile(r'^([A-Za-z][A-Za-z0-9+.-]*)://')
# A URL inside free text: scheme and '://', then up to white space (a
# closing quote stays with the host part, which is kept).
_URL_IN_TEXT = re.compile(r'([A-Za-z][A-Za-z0-9+.-]*://)(\S*)')


def _unparseable(url):
    """What is shown for a URL that cannot be redacted with confidence."""
    match = _SCHEME.match(url)
    return '%s://<unparseable URL>' % (match.group(1) if match else 'url')


def _mask_query(query):
    """``query`` (a mapping) with the values of secret-looking keys
    masked."""
    masked = strutils.mask_dict_password(dict(query), secret=MASK)
    for key in masked:
        if key.lower() in _EXTRA_SECRET_KEYS:
            masked[key] = MASK
    return masked


def is_secret_key(key):
    """Whether a query or ``key=value`` key names a secret (``password``,
    ``sslpassword``, ``pwd``...), so its value is masked."""
    return _mask_query({key: ''})[key] == MASK


def redact_database_url(url):
    """``url`` (an SQLAlchemy URL) with its password and any password-like
    query parameter shown as ``***``; None and '' are returned as given.

    Parsed by SQLAlchemy's ``make_url``, so every form SQLAlchemy accepts
    (raw or percent-encoded special characters, ``?password=``, SQLite
    paths) is redacted the way SQLAlchemy itself reads it.
    """
    if not url:
        return url
    try:
        parsed = sa.engine.make_url(url)
    except (sa.exc.ArgumentError, ValueError, TypeError):
        return _unparseable(str(url))
    if parsed.host and '@' in parsed.host:
        # A raw '@' in the password: SQLAlchemy read part of it as the host.
        return _unparseable(url)
    if parsed.query:
        parsed = parsed.set(query=_mask_query(parsed.query))
    rendered = parsed.render_as_string(hide_password=True)
    return rendered.replace('=' + urllib.parse.quote(MASK), '=' + MASK)


def _netloc_is_whole(url):
    """False when the user info of ``url`` holds a character that makes
    urllib end the host part early (so that a password would be misread)."""
    rest = url.split('://', 1)[-1]
    userinfo = rest[:rest.rfind('@')] if '@' in rest else ''
    return not any(char in userinfo for char in _NETLOC_END)


def _render_transport_host(host):
    netloc = ''
    if host.username is not None:
        netloc = urllib.parse.quote(host.username, '')
        netloc += (':' + MASK if host.password is not None else '') + '@'
    netloc += netutils.escape_ipv6(host.hostname or '')
    if host.port is not None:
        netloc += ':%d' % host.port
    return netloc


def redact_transport_url(url):
    """``url`` (an oslo.messaging transport URL, one or several hosts) with
    every password, and any password-like query parameter, as ``***``.

    Parsed by oslo.messaging's ``TransportURL``; None and '' are returned
    as given.
    """
    if not url:
        return url
    if not isinstance(url, str) or not _netloc_is_whole(url):
        return _unparseable(str(url))
    try:
        parsed = messaging.TransportURL.parse(CONF, url)
    except (messaging.InvalidTransportURL, ValueError, TypeError):
        return _unparseable(url)
    with_credentials = [host.username is not None for host in parsed.hosts]
    if any(with_credentials) and not all(with_credentials):
        # 'a:pa,ss@h' is split at the comma: the hosts disagree.
        return _unparseable(url)
    rendered = '%s://%s' % (parsed.transport, ','.join(
        _render_transport_host(host) for host in parsed.hosts))
    if parsed.virtual_host is not None:
        rendered += '/' + urllib.parse.quote(parsed.virtual_host)
    if parsed.query:
        rendered += '?' + '&'.join(
            '%s=%s' % (urllib.parse.quote(key),
                       MASK if value == MASK else urllib.parse.quote(value))
            for key, value in _mask_query(parsed.query).items())
    return rendered


def _mask_url_userinfo(match):
    scheme, rest = match.group(1), match.group(2)
    if '@' not in rest:
        return match.group(0)
    userinfo, _, location = rest.rpartition('@')
    if ':' in userinfo and not any(char in userinfo for char in ',@'):
        return '%s%s:%s@%s' % (scheme, userinfo.split(':', 1)[0], MASK,
                               location)
    return '%s%s@%s' % (scheme, MASK, location)


def mask_secrets(text):
    """``text`` (free text, e.g. a driver's error message) with passwords
    masked: ``key=value`` and ``"key": "value"`` forms by oslo.utils'
    ``mask_password``, and the user info of every URL in it."""
    if not text:
        return text
    return _URL_IN_TEXT.sub(_mask_url_userinfo,
                            strutils.mask_password(str(text), secret=MASK))


def _raw_passwords(url):
    """What may be passwords in ``url``, read without a parser (for a URL
    too broken to parse): all the user info after the first ':', and the
    same for each ','-separated host."""
    rest = url.split('://', 1)[-1]
    if '@' not in rest:
        return set()
    userinfo = rest[:rest.rfind('@')]
    found = {userinfo.partition(':')[2]}
    for hostpart in userinfo.split(','):
        password = hostpart.partition(':')[2]
        found.add(password.rpartition('@')[0] or password)
    return found


def url_passwords(url):
    """Every password in ``url`` (a database or transport URL), as its
    libraries read it, raw and percent-encoded; for scrubbing text that
    may quote the URL in some other form."""
    found = set()
    if not url or not isinstance(url, str):
        return found
    try:
        parsed = sa.engine.make_url(url)
        found.add(parsed.password)
        found.update(value for key, value in parsed.query.items()
                     if _mask_query({key: value})[key] == MASK)
    except (sa.exc.ArgumentError, ValueError, TypeError):
        pass
    try:
        found.update(host.password for host in
                     messaging.TransportURL.parse(CONF, url).hosts)
    except (messaging.InvalidTransportURL, ValueError, TypeError):
        pass
    found |= _raw_passwords(url)
    found = {str(password) for password in found if password}
    return found | {urllib.parse.quote(password, '') for password in found}


# A quoted piece of a password at least this long is masked too (a driver
# may quote the part of a password it misread, as a port say).
SCRUB_MIN_PIECE = 4

# A quoted token of one line: the quote, then what it holds.
_QUOTED = re.compile(r"""(['"])([^'"\n]+)\1""")


def _is_password_piece(token, passwords):
    """Whether ``token`` is one of ``passwords`` or a piece of one at least
    SCRUB_MIN_PIECE characters long."""
    return any(token == password or (len(token) >= SCRUB_MIN_PIECE
                                     and token in password)
               for password in passwords)


def scrub(text, urls):
    """:func:`mask_secrets` of ``text``, then every password of ``urls``
    (see :func:`url_passwords`) where it stands as a password: right
    after a colon, as in a URL's user info (``user:secret@``, also in a
    URL too broken for :func:`mask_secrets` to see), and quoted whole or
    in a piece at least :data:`SCRUB_MIN_PIECE` characters long
    (``'secr'``).

    Anywhere else the same characters are the message's own words: with
    the password ``guest``, "Invalid request" and the user name guest
    are left as they are."""
    if not text:
        return text
    text = str(text)
    passwords = set()
    for url in urls:
        passwords |= url_passwords(url)
    # Longest first: a password is masked whole rather than in the
    # pieces that other (shorter) passwords share with it.
    for password in sorted(passwords, key=len, reverse=True):
        # Right after a colon: a user info's password, whatever follows
        # (a URL cut at white space, a raw ',' that split its hosts).
        text = text.replace(':' + password, ':' + MASK)

    def quoted(match):
        if _is_password_piece(match.group(2), passwords):
            return match.group(1) + MASK + match.group(1)
        return match.group(0)
    # Before mask_secrets, which may cut a broken URL where a password
    # no longer follows its colon.
    return mask_secrets(_QUOTED.sub(quoted, text))
