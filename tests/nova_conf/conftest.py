"""The nova.conf tests need Nova 34 installed (``tox -e nova-conf``).

Without it they are skipped, unless ``GANTT_NOVA_CONF_REQUIRED`` is set
(as the tox env does), when their absence is an error. Nova is never
imported in the test process: it registers options of the same names as
Gantt's on oslo.config's global CONF; the tests run Nova's code in
processes of their own.
"""

import importlib.util
import os

import pytest

NOVA_VERSION = '34.0.0'


def nova_version():
    """The installed nova's version, or None; nothing is imported."""
    if importlib.util.find_spec('nova') is None:
        return None
    from importlib import metadata
    return metadata.version('nova')


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    ours = [item for item in items if str(item.fspath).startswith(here)]
    if not ours:
        return
    version = nova_version()
    if version == NOVA_VERSION:
        return
    reason = ('nova %s is not installed (found: %s); run tox -e nova-conf'
              % (NOVA_VERSION, version))
    if os.environ.get('GANTT_NOVA_CONF_REQUIRED'):
        raise pytest.UsageError(reason)
    for item in ours:
        item.add_marker(pytest.mark.skip(reason=reason))
