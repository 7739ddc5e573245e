"""RPC client of the accelerator service (topic ``accelerator`` on the API
bus): the only place that knows its method names and versions.

Version history
  1.0  report_devices (call): an agent replaces its host's device set.
       ``devices`` are primitives of the contract
       :class:`nimbus.accelerator.contracts.AcceleratorDevice` 1.0 (the
       contract names the same fields the first agents sent, so a report
       without a contract version is read as 1.0: no RPC version change)::

    {"nimbus_object.version": "1.0", "uuid", "type": "FPGA"|"GPU",
     "vendor", "model", "std_board_info", "vendor_board_info", "hostname",
     "driver_name",
     "deployables": [{"uuid", "name", "num_accelerators", "rp_uuid",
                      "driver_name",
                      "attach_handles": [{"uuid", "attach_type": "PCI",
                                          "attach_info": str,
                                          "in_use": false}]}]}

  1.1  report_many (call): the first reports of many hosts in one call
       (``reports``: ``{host: [device]}``, each host's devices as in
       report_devices), one transaction on the service's side.
"""

from nimbus.accelerator import contracts
from nimbus.common import rpc

TOPIC = 'accelerator'
VERSION = '1.1'


class AcceleratorAPI:
    """``AcceleratorAPI(transport, conf=None)``."""

    def __init__(self, transport, conf=None):
        self._client = rpc.get_client(transport, TOPIC, VERSION, conf=conf)

    def report_devices(self, ctxt, host, devices):
        """Call: make ``host``'s recorded devices exactly ``devices``
        (idempotent; a device whose attach handle an accelerator request
        holds is kept even when missing). Returns ``{"devices": n}``, n
        the number of devices reported."""
        # contracts go as their primitives; a dict is taken as one (the
        # service checks it and refuses a malformed report)
        primitives = [
            d.to_primitive()
            if isinstance(d, contracts.AcceleratorDevice)
            else d
            for d in devices
        ]
        return self._client.prepare(version='1.0').call(
            ctxt, 'report_devices', host=host, devices=primitives
        )

    def takes_batches(self):
        """True when the cap lets :meth:`report_many` go (1.1)."""
        return self._client.can_send_version('1.1')

    def report_many(self, ctxt, reports):
        """Call (1.1): :meth:`report_devices` for each host of
        ``reports`` (``{host: devices}``) at once. Returns ``{"devices":
        {host: n}}``."""
        return self._client.prepare(version='1.1').call(
            ctxt,
            'report_many',
            reports={
                host: [
                    d.to_primitive()
                    if isinstance(d, contracts.AcceleratorDevice)
                    else d
                    for d in devices
                ]
                for host, devices in reports.items()
            },
        )
