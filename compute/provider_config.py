"""Provider config files: custom inventories and traits an operator adds
to a compute's nodes, in the format of Nova's (``[compute]
provider_config_location``, schema version 1.x)::

    meta:
      schema_version: '1.0'
    providers:
      - identification:
          uuid: $COMPUTE_NODE        # or a node's uuid, or name: <node>
        inventories:
          additional:
            - CUSTOM_FPGA:
                total: 4
                reserved: 0
                min_unit: 1
                max_unit: 2
                step_size: 1
                allocation_ratio: 1.0
        traits:
          additional:
            - CUSTOM_GOLD

:func:`load` reads every ``*.yaml`` file of the directory, in name order,
and refuses (ConfigError naming the file and the problem) what Nova
refuses: a file that cannot be read or parsed, a missing or unsupported
major schema version, a document that does not follow the schema (one
identification, by ``uuid`` or ``name``; inventory fields as above,
``total`` required), a resource class or trait that is not custom
(``CUSTOM_`` and capitals, digits, underscores), and a provider
identified twice. A provider that adds nothing is ignored with a
WARNING. :class:`ProviderConfigs` then merges them into the nodes' own
inventories and traits at each report; ``$COMPUTE_NODE`` applies to
every node of the compute that no entry names, and a file may neither
name one node both by uuid and by name nor redefine a class the node
reports itself.
"""

import glob
import os
import re

from oslo_log import log as logging
from oslo_utils import uuidutils
import yaml

from scheduler import exception

LOG = logging.getLogger(__name__)

COMPUTE_NODE = '$COMPUTE_NODE'
# Major schema versions understood, with their minor versions.
SUPPORTED_SCHEMA_VERSIONS = {1: {0}}
INVENTORY_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit',
                    'step_size', 'allocation_ratio')
MAX_NAME_LEN = 200

_VERSION = re.compile(r'^([0-9]+)\.([0-9]|[1-9][0-9]+)$')
_NAME = re.compile(r'^[A-Z0-9_]{1,255}$')
_CUSTOM = re.compile(r'^CUSTOM_[A-Z0-9_]+$')


def is_custom(name):
    """Whether ``name`` is a custom resource class or trait name."""
    return isinstance(name, str) and len(name) <= 255 and bool(
        _CUSTOM.match(name))


def _error(path, problem):
    return exception.ConfigError(reason='provider config file %s: %s'
                                 % (path, problem))


def _read(path):
    try:
        with open(path) as stream:
            return yaml.safe_load(stream)
    except OSError as error:
        raise _error(path, 'cannot be read (%s)' % error.strerror)
    except yaml.YAMLError as error:
        mark = getattr(error, 'problem_mark', None)
        where = ('' if mark is None else ' at line %d, column %d'
                 % (mark.line + 1, mark.column + 1))
        raise _error(path, 'is not valid YAML%s: %s'
                     % (where, getattr(error, 'problem', None) or error))


def _schema_version(path, document):
    """``(major, minor)`` of the document; refuses an unknown major."""
    meta = document.get('meta') if isinstance(document, dict) else None
    version = meta.get('schema_version') if isinstance(meta, dict) else None
    found = _VERSION.match(version) if isinstance(version, str) else None
    if found is None:
        raise _error(path, 'has no schema version (meta: schema_version: '
                           '"1.0")')
    major, minor = int(found.group(1)), int(found.group(2))
    if major not in SUPPORTED_SCHEMA_VERSIONS:
        raise _error(path, 'has the unsupported schema major version %d'
                     % major)
    if minor not in SUPPORTED_SCHEMA_VERSIONS[major]:
        LOG.warning('Provider config file %s is at schema version %s; '
                    'fields newer than %d.%d may be ignored', path, version,
                    major, max(SUPPORTED_SCHEMA_VERSIONS[major]))
    return version


def _invalid(path, version, problem):
    return _error(path, 'did not pass validation for schema version %s: %s'
                  % (version, problem))


def _check_identification(where, identification):
    if not isinstance(identification, dict) or len(identification) != 1:
        return '%s must have exactly one of uuid and name' % where
    (key, value), = identification.items()
    if key == 'uuid':
        if value != COMPUTE_NODE and not (
                isinstance(value, str) and uuidutils.is_uuid_like(value)
                and len(value) == 36):
            return '%s.uuid must be a UUID or %s' % (where, COMPUTE_NODE)
    elif key == 'name':
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_NAME_LEN:
            return ('%s.name must be a string of 1 to %d characters'
                    % (where, MAX_NAME_LEN))
    else:
        return '%s has the unknown key %r' % (where, key)
    return None


def _check_inventory(where, name, fields):
    if not isinstance(name, str) or not _NAME.match(name):
        return '%s: %r is not a resource class name' % (where, name)
    if not isinstance(fields, dict):
        return '%s.%s must be a mapping' % (where, name)
    unknown = sorted(set(fields) - set(INVENTORY_FIELDS), key=str)
    if unknown:
        return '%s.%s has unknown fields %s' % (where, name, unknown)
    if 'total' not in fields:
        return '%s.%s has no total' % (where, name)
    for field, value in fields.items():
        number = (int, float) if field == 'allocation_ratio' else (int,)
        if isinstance(value, bool) or not isinstance(value, number):
            return '%s.%s.%s must be %s, not %r' % (
                where, name, field,
                'a number' if field == 'allocation_ratio' else 'an integer',
                value)
    return None


def _adjective(where, section):
    """The list of the ``additional`` adjective of a section, or a
    problem string."""
    if section is None:
        return []
    if not isinstance(section, dict):
        return '%s must be a mapping' % where
    additional = section.get('additional', [])
    if not isinstance(additional, list):
        return '%s.additional must be a list' % where
    return additional


def _schema_problem(document):
    """What breaks schema 1.x in ``document``, or None."""
    if '__source_file' in document:
        return '__source_file is reserved'
    providers = document.get('providers', [])
    if not isinstance(providers, list):
        return 'providers must be a list'
    for index, provider in enumerate(providers):
        where = 'providers[%d]' % index
        if not isinstance(provider, dict) or 'identification' not in provider:
            return '%s must be a mapping with an identification' % where
        problem = _check_identification(where + '.identification',
                                        provider['identification'])
        if problem:
            return problem
        inventories = _adjective(where + '.inventories',
                                 provider.get('inventories'))
        if isinstance(inventories, str):
            return inventories
        for position, item in enumerate(inventories):
            item_where = '%s.inventories.additional[%d]' % (where, position)
            if not isinstance(item, dict):
                return '%s must be a mapping' % item_where
            for name, fields in item.items():
                problem = _check_inventory(item_where, name, fields)
                if problem:
                    return problem
        traits = _adjective(where + '.traits', provider.get('traits'))
        if isinstance(traits, str):
            return traits
        for position, trait in enumerate(traits):
            if not isinstance(trait, str) or not _NAME.match(trait):
                return ('%s.traits.additional[%d]: %r is not a trait name'
                        % (where, position, trait))
    return None


def _additions(provider):
    """``(inventories, traits)`` a provider entry adds: ``{class: fields}``
    and a set."""
    inventories = {}
    for item in (provider.get('inventories') or {}).get('additional', []):
        inventories.update(item)
    return inventories, set((provider.get('traits') or {}).get(
        'additional', []))


def _parse(path):
    """The providers of one file, checked."""
    document = _read(path)
    version = _schema_version(path, document)
    problem = _schema_problem(document)
    if problem:
        raise _invalid(path, version, problem)
    providers = []
    for provider in document.get('providers', []):
        inventories, traits = _additions(provider)
        not_custom = sorted(trait for trait in traits if not is_custom(trait))
        if not_custom:
            raise _error(path, 'invalid traits, only custom traits are '
                               'allowed: %s' % ', '.join(not_custom))
        not_custom = sorted(name for name in inventories
                            if not is_custom(name))
        if not_custom:
            raise _error(path, 'invalid resource classes, only custom '
                               'resource classes are allowed: %s'
                         % ', '.join(not_custom))
        (ident,) = provider['identification'].values()
        if not inventories and not traits:
            LOG.warning('Provider %s of provider config file %s adds no '
                        'inventory or trait; ignored', ident, path)
            continue
        providers.append((ident, inventories, traits))
    return providers


def load(directory):
    """``{uuid or name: (inventories, traits, file name)}`` of every
    ``*.yaml`` file of ``directory`` (see the module's docstring)."""
    paths = sorted(glob.glob(os.path.join(directory, '*.yaml')))
    if not paths:
        LOG.info('No provider config files in %s', directory)
    return load_files(paths)


def load_files(paths):
    """``{uuid or name: (inventories, traits, file name)}`` of the given
    files, checked as :func:`load` checks a directory's (gantt-sim's
    cloud files name theirs one by one)."""
    configs = {}
    for path in paths:
        for ident, inventories, traits in _parse(path):
            if ident in configs:
                raise exception.ConfigError(
                    reason='provider %s has multiple definitions in '
                           'provider config files %s' % (ident, ', '.join(
                               sorted({configs[ident][2], path}))))
            configs[ident] = (inventories, traits, path)
    return configs


class ProviderConfigs:
    """The provider configs of one compute, merged into its nodes'
    reports by :meth:`apply`."""

    def __init__(self, configs):
        self.configs = configs
        self._absent = set()

    @classmethod
    def from_directory(cls, directory):
        return cls(load(directory))

    def _targets(self, nodes):
        """``[(node, ident)]``: each node with the entry that applies to
        it (its own, else ``$COMPUTE_NODE``'s)."""
        targets = []
        named = set()
        for ident in self.configs:
            if ident == COMPUTE_NODE:
                continue
            matches = [node for node in nodes
                       if ident in (node['uuid'], node['nodename'])]
            if not matches and ident not in self._absent:
                LOG.warning('Provider %s of provider config file %s is not '
                            'a node of this compute; ignored', ident,
                            self.configs[ident][2])
                self._absent.add(ident)
            for node in matches:
                if node['uuid'] in named:
                    raise exception.ConfigError(
                        reason='provider config file %s names node %s (%s) '
                               'by both its uuid and its name'
                        % (self.configs[ident][2], node['nodename'],
                           node['uuid']))
                named.add(node['uuid'])
                targets.append((node, ident))
        if COMPUTE_NODE in self.configs:
            targets.extend((node, COMPUTE_NODE) for node in nodes
                           if node['uuid'] not in named)
        return targets

    def apply(self, nodes):
        """Add the configured inventories and traits to ``nodes`` (dicts
        with ``uuid``, ``nodename``, ``inventories`` and ``traits``,
        changed in place).

        :raises ConfigError: an entry redefines a class the node reports
            itself, or names one node by uuid and by name.
        """
        for node, ident in self._targets(nodes):
            inventories, traits, path = self.configs[ident]
            owned = sorted(set(inventories) & set(node['inventories']))
            if owned:
                raise exception.ConfigError(
                    reason='provider config file %s defines inventories '
                           'that node %s reports itself: %s'
                    % (path, node['nodename'], ', '.join(owned)))
            node['inventories'].update(
                (name, dict(fields)) for name, fields in inventories.items())
            node['traits'] = sorted(set(node['traits']) | traits)
