"""The options of the configuration files that Gantt does not read.

A nova.conf copied from a Nova scheduler or conductor node starts Gantt's
daemons, but it holds many options Gantt has no use for (``[workarounds]``
escape hatches of nova-compute, ``[DEFAULT] baseapi``, the credentials of
``[placement]``...). None of them may be ignored in silence: once a daemon
has parsed its files and built its manager (so that every library has
registered its options), :func:`warn_unread` logs one WARNING line per
option that nothing in Gantt reads::

    unknown_options.warn_unread(CONF)
    # Option [workarounds] never_download_image_if_on_rbd
    #   (/etc/gantt/gantt.conf) is not implemented by Gantt and is ignored:
    #   a Nova option Gantt does not have, or a misspelling

An option counts as read when Gantt registers it (under its name or one of
its deprecated names), or when it belongs to a library whose options
Gantt's sample config lists (:data:`HONOURED_NAMESPACES`), whether or not
that library registered it in this process (oslo.messaging registers the
options of the drivers it loads only). The sections of Nova's clients of
other services and of the parts of Nova that Gantt does not contain
(:data:`FOREIGN_SECTIONS`) say so in their line: their options are not
missing features, they configure something Gantt never runs.
"""

import glob
import importlib.metadata
import os

from oslo_config import cfg
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# The oslo.config namespaces of etc/gantt/gantt-config-generator.conf:
# Gantt's own options and those of the libraries its daemons run with.
HONOURED_NAMESPACES = ('gantt', 'oslo.log', 'oslo.messaging',
                       'oslo.reports', 'oslo.service.service',
                       'oslo.versionedobjects')

_CLIENT = ("it configures Nova's client of %s; Gantt calls no other "
           "service")
_ELSEWHERE = "it configures %s, which Gantt does not include"

# Sections of a nova.conf that configure what Gantt never runs.
FOREIGN_SECTIONS = {
    'placement': ("it configures the client of the Placement API, which "
                  "only Nova mode ([scheduler] backend = nova) uses; Gantt's "
                  "own mode places in its own database"),
    'neutron': _CLIENT % 'Neutron',
    'glance': _CLIENT % 'Glance',
    'cinder': _CLIENT % 'Cinder',
    'keystone': _CLIENT % 'Keystone',
    'ironic': _CLIENT % 'Ironic',
    'cyborg': _CLIENT % 'Cyborg',
    'manila': _CLIENT % 'Manila',
    'barbican': _CLIENT % 'Barbican',
    'barbican_service_user': _CLIENT % 'Barbican',
    'key_manager': _CLIENT % 'the key manager',
    'vault': _CLIENT % 'Vault',
    'service_user': _CLIENT % 'other services (its service token)',
    'keystone_authtoken': _ELSEWHERE % "nova-api's token checks",
    'api': _ELSEWHERE % 'nova-api',
    'wsgi': _ELSEWHERE % 'nova-api',
    'cors': _ELSEWHERE % 'nova-api',
    'oslo_middleware': _ELSEWHERE % 'nova-api',
    'oslo_policy': _ELSEWHERE % "nova-api's policies",
    'oslo_limit': _ELSEWHERE % "nova-api's quotas",
    'quota': _ELSEWHERE % "nova-api's quotas",
    'libvirt': _ELSEWHERE % 'a hypervisor driver of nova-compute',
    'vmware': _ELSEWHERE % 'a hypervisor driver of nova-compute',
    'zvm': _ELSEWHERE % 'a hypervisor driver of nova-compute',
    'os_brick': _ELSEWHERE % "nova-compute's volume attachments",
    'os_vif_linux_bridge': _ELSEWHERE % "nova-compute's VIF plugging",
    'os_vif_ovs': _ELSEWHERE % "nova-compute's VIF plugging",
    'vnc': _ELSEWHERE % "Nova's consoles",
    'spice': _ELSEWHERE % "Nova's consoles",
    'serial_console': _ELSEWHERE % "Nova's consoles",
    'mks': _ELSEWHERE % "Nova's consoles",
    'profiler': _ELSEWHERE % 'OSProfiler',
    # Registered by a library Gantt imports, but Gantt takes no file locks.
    'oslo_concurrency': _ELSEWHERE % "oslo.concurrency's file locks",
}

NOT_IMPLEMENTED = 'a Nova option Gantt does not have, or a misspelling'


def _group_name(group):
    if group is None:
        return 'DEFAULT'
    return group if isinstance(group, str) else group.name


def _normalize_section(section):
    """As oslo.config reads a section name."""
    return section if section == 'DEFAULT' else section.lower()


def _names_of(opt, group):
    """``(section, option)`` pairs that set ``opt`` of ``group``."""
    names = {(group, opt.dest)}
    for old in opt.deprecated_opts:
        names.add((_normalize_section(old.group or group),
                   (old.name or opt.dest).replace('-', '_')))
    return names


def _namespace_opts(namespace):
    """``[(group, opts)]`` of an oslo.config.opts namespace, or [] when no
    installed package declares it."""
    for entry_point in importlib.metadata.entry_points(
            group='oslo.config.opts', name=namespace):
        return entry_point.load()()
    return []


def read_names(conf):
    """Every ``(section, option)`` that sets something Gantt reads."""
    names = set()
    for namespace in HONOURED_NAMESPACES:
        for group, opts in _namespace_opts(namespace):
            for opt in opts:
                names |= _names_of(opt, _group_name(group))
    # What is registered in this process (command line options, what
    # libraries register when they load a driver), apart from the
    # sections of what Gantt never runs.
    for key in conf:
        value = conf[key]
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            section = _normalize_section(key)
            if section not in FOREIGN_SECTIONS:
                names.update((section, name) for name in value)
        else:
            names.add(('DEFAULT', key))
    return names


def config_files(conf):
    """The files ``conf`` read, in order: ``--config-file`` (or the
    default files), then the ``*.conf`` of the config directories."""
    files = [path for path in (conf.config_file or [])
             if os.path.isfile(path)]
    for directory in conf.config_dirs or conf.default_config_dirs or []:
        files.extend(sorted(glob.glob(os.path.join(directory, '*.conf'))))
    return files


def options_in_files(paths):
    """``{(section, option): path}`` of every option set in ``paths``
    (the last file that sets it)."""
    found = {}
    for path in paths:
        sections = {}
        cfg.ConfigParser(path, sections).parse()
        for section, options in sections.items():
            for name in options:
                found[(_normalize_section(section),
                       name.replace('-', '_'))] = path
    return found


def _nova_mode(conf):
    try:
        return conf.scheduler.backend == 'nova'
    except (cfg.NoSuchOptError, AttributeError):
        return False


def unread(conf):
    """``[(section, option, path, why)]`` of the options set in the
    config files that Gantt does not read, sorted.

    ``[placement]`` is read in Nova mode only, and then whole: its auth
    plugin's options are keystoneauth1's to judge."""
    read = read_names(conf)
    nova_mode = _nova_mode(conf)
    return sorted(
        (section, name, path,
         FOREIGN_SECTIONS.get(section, NOT_IMPLEMENTED))
        for (section, name), path in options_in_files(
            config_files(conf)).items()
        if section == 'placement' and not nova_mode
        or section != 'placement' and (section, name) not in read)


def warn_unread(conf):
    """Log one WARNING line per option of the config files that Gantt does
    not read; how many."""
    ignored = unread(conf)
    for section, name, path, why in ignored:
        LOG.warning('Option [%s] %s (%s) is not implemented by Gantt and '
                    'is ignored: %s', section, name, path, why)
    return len(ignored)
