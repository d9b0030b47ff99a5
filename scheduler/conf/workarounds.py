"""Options of the ``[workarounds]`` group: Nova's escape hatches that
still change scheduling."""

from oslo_config import cfg

workarounds_group = cfg.OptGroup(
    'workarounds',
    title='Workarounds',
    help="Nova's workarounds that scheduling still honours.")

workarounds_opts = [
    cfg.BoolOpt('disable_fallback_pcpu_query',
                default=False,
                help="""
Do not ask hosts without PCPU inventory for VCPU instead.

A request for dedicated CPUs (``hw:cpu_policy=dedicated``) asks for PCPU.
Hosts whose computes do not set ``[compute] cpu_dedicated_set`` report no
PCPU; by default such a request is asked of them again with VCPU (as before
PCPU existed), and a claim there takes VCPU. Set this once every compute that
hosts pinned instances reports PCPU.

Related options:

* ``[compute] cpu_dedicated_set``
"""),
]


def register_opts(conf):
    conf.register_group(workarounds_group)
    conf.register_opts(workarounds_opts, group=workarounds_group)


def list_opts():
    return {workarounds_group: workarounds_opts}
