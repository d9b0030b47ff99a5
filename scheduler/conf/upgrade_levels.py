"""Options of the ``[upgrade_levels]`` group: RPC version caps."""

from oslo_config import cfg

upgrade_group = cfg.OptGroup(
    'upgrade_levels',
    title='RPC version caps',
    help="""
Caps on the RPC versions a client sends, for rolling upgrades.

While some services still run an older release, cap the clients of the newer
ones at the older version so that every message can be understood.
""")

upgrade_levels_opts = [
    cfg.StrOpt('scheduler',
               help="""
Cap on the scheduler RPC API version this service sends.

Possible values:

* unset: send the newest version this release knows.
* A version string such as ``1.0``: the client steps down to the newest
  message form that fits under the cap.
"""),
    cfg.StrOpt('conductor',
               help="""
Cap on the conductor RPC API version this service sends.
"""),
    cfg.StrOpt('compute',
               help="""
Cap on the compute RPC API version this service sends.
"""),
]


def register_opts(conf):
    conf.register_group(upgrade_group)
    conf.register_opts(upgrade_levels_opts, group=upgrade_group)


def list_opts():
    return {upgrade_group: upgrade_levels_opts}
