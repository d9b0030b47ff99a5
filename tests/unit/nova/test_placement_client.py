"""The Placement client: built from a nova.conf's ``[placement]``."""

from oslo_config import cfg
import pytest

from scheduler.conf import placement as placement_conf
from scheduler.nova import placement_client


def _conf(endpoint):
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf([], project='gantt', default_config_files=[])
    conf.set_override('auth_type', 'admin_token', group='placement')
    # The plugin's own options appear once its name is known.
    from keystoneauth1 import loading as ks_loading
    ks_loading.register_auth_conf_options(conf, 'placement')
    plugin = ks_loading.get_plugin_loader('admin_token')
    conf.register_opts(ks_loading.get_auth_plugin_conf_options(plugin),
                       group='placement')
    conf.set_override('endpoint', endpoint, group='placement')
    conf.set_override('token', 'admin', group='placement')
    return conf


def unreachable_client():
    """A client of a port nothing listens on (the discard port, closed
    here). The endpoint is also the adapter's override: the in-process
    Placement of other tests answers every endpoint a session looks up
    while it runs."""
    conf = _conf('http://127.0.0.1:9')
    conf.set_override('endpoint_override', 'http://127.0.0.1:9',
                      group='placement')
    return placement_client.PlacementClient.from_conf(conf)


def test_unreachable_placement_is_named():
    client = unreachable_client()
    with pytest.raises(placement_client.PlacementUnreachable,
                       match='Placement is unreachable'):
        client.get('/resource_providers', version='1.14')


def test_nova_mode_defaults_to_novas_filters_unless_the_file_says(tmp_path):
    from scheduler.conf import filter_scheduler as filter_conf

    def filters(text):
        path = tmp_path / 'nova.conf'
        path.write_text(text)
        conf = cfg.ConfigOpts()
        filter_conf.register_opts(conf)
        conf(['--config-file', str(path)], project='gantt')
        filter_conf.set_nova_mode_defaults(conf)
        return conf.filter_scheduler.enabled_filters

    assert filters('') == filter_conf.NOVA_MODE_ENABLED_FILTERS
    assert 'DiskFilter' not in filters('')
    assert filters('[filter_scheduler]\nenabled_filters = RamFilter\n') == [
        'RamFilter']
