"""Options of the ``[placement]`` group: how Gantt reaches Placement.

Only read in Nova mode (``[scheduler] backend = nova``). The options are
keystoneauth1's (session, auth plugin, adapter), registered as Nova
registers them, so a nova.conf's ``[placement]`` section works as it is,
for example without Keystone::

    [placement]
    auth_type = admin_token
    endpoint = http://127.0.0.1:8778
    token = admin
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

SERVICE_TYPE = 'placement'

placement_group = cfg.OptGroup(
    'placement',
    title='Placement service options',
    help="How the scheduler reaches the Placement API in Nova mode.")


def _adapter_opts():
    opts = ks_loading.get_adapter_conf_options(include_deprecated=False)
    for opt in opts:
        if opt.dest == 'service_type':
            opt.default = SERVICE_TYPE
        elif opt.dest == 'valid_interfaces':
            opt.default = ['internal', 'public']
    return opts


def register_opts(conf):
    conf.register_group(placement_group)
    ks_loading.register_session_conf_options(conf, placement_group.name)
    ks_loading.register_auth_conf_options(conf, placement_group.name)
    conf.register_opts(_adapter_opts(), group=placement_group)


def list_opts():
    return {
        placement_group: (
            ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options('password')
            + ks_loading.get_auth_plugin_conf_options('v3password')
            + _adapter_opts())}
