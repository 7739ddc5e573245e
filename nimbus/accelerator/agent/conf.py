"""Options of nimbus-accelerator-agent (``[accelerator_agent]``) and of the
drivers it ships (``[fake_fpga]``, ``[fake_gpu]``). The simulated-hosts
machinery's ``[simulated_hosts]`` options are the compute's (shared)."""

from oslo_config import cfg

from nimbus.accelerator.drivers import fake

GROUP = 'accelerator_agent'

AGENT_OPTS = [
    cfg.ListOpt(
        'enabled_drivers',
        default=['fake_fpga', 'fake_gpu'],
        help='Accelerator drivers the agent loads (entry points of '
        'the group nimbus.accelerator.drivers).',
    ),
    cfg.IntOpt(
        'report_interval',
        default=60,
        min=1,
        help='Seconds between two reports of the discovered devices '
        'to the accelerator service and to placement.',
    ),
    cfg.IntOpt(
        'refresh_interval',
        default=300,
        min=0,
        help='Seconds during which a periodic report that discovers '
        'exactly the devices the last complete report sent is '
        'skipped: nothing goes to the accelerator service or to '
        'placement (as a compute does not write an unchanged '
        'inventory). The first periodic report after that many '
        'seconds is complete again and reads placement, which '
        'repairs what changed behind the agent. 0: every periodic '
        'report is complete.',
    ),
    cfg.IntOpt(
        'placement_retry_interval',
        default=5,
        min=1,
        help='Seconds between two tries of a placement report that '
        "could not be made (the compute node's provider does "
        'not exist yet, or placement failed).',
    ),
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(AGENT_OPTS, group=GROUP)
    fake.register_opts(conf)


def list_opts():
    return [(GROUP, AGENT_OPTS)] + fake.list_opts()
