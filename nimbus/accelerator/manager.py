"""The accelerator service's RPC endpoint (topic ``accelerator``): thin.
It checks the shape of a report and hands it to
:func:`nimbus.accelerator.objects.device.report`."""

import oslo_messaging as messaging
from oslo_log import log as logging

from nimbus.accelerator.objects import device as device_obj
from nimbus.accelerator.rpcapi import VERSION
from nimbus.common import rpc

LOG = logging.getLogger(__name__)

DEVICE_TYPES = ('FPGA', 'GPU')


def _check_devices(devices):
    for device in devices:
        if not isinstance(device, dict) or not isinstance(
            device.get('uuid'), str
        ):
            raise rpc.InvalidMessage(
                'report_devices: each device must be a dict with a uuid'
            )
        if device.get('type') not in DEVICE_TYPES:
            raise rpc.InvalidMessage(
                'report_devices: device %s has type %r,'
                ' not one of %s'
                % (device['uuid'], device.get('type'), ', '.join(DEVICE_TYPES))
            )
        for deployable in device.get('deployables') or ():
            if (
                not isinstance(deployable, dict)
                or not isinstance(deployable.get('uuid'), str)
                or not isinstance(deployable.get('num_accelerators'), int)
            ):
                raise rpc.InvalidMessage(
                    'report_devices: a deployable of device %s needs a uuid '
                    'and an integer num_accelerators' % device['uuid']
                )
            for handle in deployable.get('attach_handles') or ():
                if not isinstance(handle, dict) or not all(
                    isinstance(handle.get(k), str)
                    for k in ('uuid', 'attach_type', 'attach_info')
                ):
                    raise rpc.InvalidMessage(
                        'report_devices: an attach handle of deployable %s '
                        'needs uuid, attach_type and attach_info strings'
                        % deployable['uuid']
                    )


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
        _check_devices(devices)
        count = device_obj.report(self.adb, host, devices)
        LOG.info('Host %s reports %d accelerator device(s)', host, count)
        return {'devices': count}
