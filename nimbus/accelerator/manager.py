"""The accelerator service's RPC endpoint (topic ``accelerator``): thin.
It reads the report as :class:`~nimbus.accelerator.contracts.
AcceleratorDevice` contracts (a malformed one is refused as
InvalidMessage) and hands it to
:func:`nimbus.accelerator.objects.device.report`."""

import oslo_messaging as messaging
from oslo_log import log as logging

from nimbus.accelerator import contracts
from nimbus.accelerator.objects import device as device_obj
from nimbus.accelerator.rpcapi import VERSION
from nimbus.common import rpc

LOG = logging.getLogger(__name__)


class AcceleratorManager:
    """``AcceleratorManager(adb)``: ``adb`` an
    :class:`~nimbus.accelerator.objects.base.AcceleratorDB`."""

    target = messaging.Target(version=VERSION)

    def __init__(self, adb):
        self.adb = adb

    @rpc.expose(
        required=('host', 'devices'), types={'host': str, 'devices': list}
    )
    def report_devices(self, ctxt, host, devices):
        with rpc.arriving('report_devices'):
            parsed = [
                contracts.AcceleratorDevice.from_primitive(d) for d in devices
            ]
        count = device_obj.report(
            self.adb, host, [d.as_record() for d in parsed]
        )
        LOG.info('Host %s reports %d accelerator device(s)', host, count)
        return {'devices': count}

    @rpc.expose(required=('reports',), types={'reports': dict})
    def report_many(self, ctxt, reports):
        with rpc.arriving('report_many'):
            parsed = {
                host: [
                    contracts.AcceleratorDevice.from_primitive(d).as_record()
                    for d in devices
                ]
                for host, devices in reports.items()
                if isinstance(host, str) and isinstance(devices, list)
            }
        if len(parsed) != len(reports):
            raise rpc.InvalidMessage('report_many: {host: [device]}')
        counts = device_obj.report_many(self.adb, parsed)
        LOG.info(
            '%d hosts report %d accelerator device(s)',
            len(counts),
            sum(counts.values()),
        )
        return {'devices': counts}
