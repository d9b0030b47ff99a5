"""Process start-up: parse the command line and config files, set up logs.

Every console script calls :func:`parse_args` first::

    from scheduler import config
    config.parse_args(sys.argv, description='The Gantt scheduler')

Secrets never reach the logs: ``transport_url`` and ``[database]
connection`` are registered ``secret=True`` (masked by ``log_opt_values``)
and :func:`redact_url` is what every log line and error message uses when it
has to name a URL.
"""

import urllib.parse

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts

from scheduler import conf

CONF = conf.CONF

_DEFAULT_LOG_LEVELS = [
    'amqp=WARN', 'amqplib=WARN', 'kombu=WARN', 'oslo.messaging=INFO',
    'oslo_messaging=INFO', 'sqlalchemy=WARN', 'stevedore=WARN',
    'alembic=WARN', 'cotyledon=WARN', 'oslo_service=INFO', 'urllib3=WARN',
]

_registered = False


def register_opts():
    """Register the options Gantt reads but does not own: oslo.log's, and
    oslo.messaging's ``[DEFAULT]`` ones (transport_url...), so that they can
    be read and overridden before the transport exists. Gantt's exchange is
    ``gantt``. Safe to call more than once."""
    global _registered
    if _registered:
        return
    logging.register_options(CONF)
    logging.set_defaults(default_log_levels=_DEFAULT_LOG_LEVELS)
    # Changes the options' own default (not a CONF-level default, which
    # CONF.reset() would drop), before list_opts() copies them.
    messaging.set_transport_defaults(control_exchange='gantt')
    for group, opts in messaging_opts.list_opts():
        if group is None:
            CONF.register_opts(opts)
    _registered = True


def parse_args(argv, description=None, default_config_files=None,
               cli_opts=None):
    """Load options from argv[1:] and the config files; set up logging."""
    register_opts()
    if cli_opts:
        CONF.register_cli_opts(cli_opts)
    CONF(argv[1:], project='gantt', prog=argv[0].rsplit('/', 1)[-1],
         description=description, default_config_files=default_config_files)
    logging.setup(CONF, 'gantt')


def redact_url(url):
    """Return ``url`` with any password replaced by ``***``.

    Works for SQLAlchemy URLs and oslo.messaging transport URLs, including
    transport URLs that list several hosts (``rabbit://a:p@h1,b:q@h2/``).
    """
    if not url:
        return url
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return '<unparseable URL>'
    if '@' not in parts.netloc:
        return url
    hosts = []
    for hostpart in parts.netloc.split(','):
        if '@' in hostpart:
            userinfo, _, location = hostpart.rpartition('@')
            user = userinfo.split(':', 1)[0]
            masked = user + (':***' if ':' in userinfo else '')
            hostpart = masked + '@' + location
        hosts.append(hostpart)
    return urllib.parse.urlunsplit(parts._replace(netloc=','.join(hosts)))
