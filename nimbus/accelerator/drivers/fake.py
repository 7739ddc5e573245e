"""Fake FPGA and GPU drivers: devices described by options, programming
that takes as long (or fails) as configured.

``[fake_fpga]`` and ``[fake_gpu]`` each set how many devices a host has,
their vendor and product ids, how many accelerators each device offers,
how long programming takes (``program_seconds``) and whether it fails
(``fail_program``, for the bind-failure paths). Options are read when
used, so a test (or an operator with SIGHUP-less patience) can change them
on a running agent.

A test driving the agent as a daemon steers it through ``control_file``
(a JSON object, read at each programming, after ``program_seconds``):

``{"hold": true}``
    programming waits, polling the file, until it no longer says so (or
    the agent stops): the test decides when the bind ends;
``{"fail": true}``
    programming fails on every host;
``{"fail_hosts": ["<host>", ...]}``
    programming fails on those hosts only.

A missing or unreadable file is an empty object.
"""

import json
import os
import threading

from oslo_config import cfg
from oslo_log import log as logging

from nimbus.accelerator.drivers import base

LOG = logging.getLogger(__name__)


def _opts(count, vendor, product, model, num_accelerators):
    return [
        cfg.IntOpt(
            'count',
            default=count,
            min=0,
            help='Devices of this kind on each host.',
        ),
        cfg.StrOpt(
            'vendor',
            default=vendor,
            help='PCI vendor id of the devices (hex, no 0x).',
        ),
        cfg.StrOpt(
            'product',
            default=product,
            help='PCI product id of the devices (hex, no 0x).',
        ),
        cfg.StrOpt(
            'model', default=model, help='Model name reported for the devices.'
        ),
        cfg.IntOpt(
            'num_accelerators',
            default=num_accelerators,
            min=1,
            help='Accelerators each device offers (its inventory '
            'total in placement, and its attach handles).',
        ),
        cfg.FloatOpt(
            'program_seconds',
            default=0.0,
            min=0.0,
            help='How long programming one attach handle takes.',
        ),
        cfg.BoolOpt(
            'fail_program',
            default=False,
            help='Programming fails (after program_seconds), for '
            'testing the bind failure paths.',
        ),
        cfg.StrOpt(
            'control_file',
            default=None,
            help='Tests: a JSON file read at each programming; '
            '{"hold": true} makes programming wait until the file '
            'changes, {"fail": true} makes it fail, {"fail_hosts": '
            '[...]} makes it fail on those hosts.',
        ),
    ]


HOLD_POLL = 0.1
# polls of a control file that does not parse before it counts as empty
UNREADABLE_POLLS = 20


FPGA_OPTS = _opts(1, '8086', '09c4', 'fake-arria10', 1)
GPU_OPTS = _opts(1, '10de', '1eb8', 'fake-tesla-t4', 1)


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(FPGA_OPTS, group='fake_fpga')
    conf.register_opts(GPU_OPTS, group='fake_gpu')


def list_opts():
    return [('fake_fpga', FPGA_OPTS), ('fake_gpu', GPU_OPTS)]


class FakeDriver(base.AcceleratorDriver):
    """Devices from ``[<name>]`` options; ``name`` is the driver's entry
    point name and its option group."""

    name = None
    pci_bus_base = 0

    def __init__(self, conf, host):
        super().__init__(conf, host)
        register_opts(conf)
        self._halt = threading.Event()
        self._lock = threading.Lock()
        # attach handle uuid -> arq uuid it is programmed for.
        self.programmed = {}

    @property
    def opts(self):
        return self.conf[self.name]

    def _attach_info(self, index, function):
        return json.dumps(
            {
                'domain': '0000',
                'bus': '%02x' % (self.pci_bus_base + index),
                'device': '00',
                'function': str(function),
            },
            sort_keys=True,
        )

    def discover(self):
        opts = self.opts
        devices = []
        for index in range(opts.count):
            dev_uuid = base.device_uuid(self.host, self.name, index)
            deployable = base.child_uuid(dev_uuid, 'deployable', 0)
            handles = [
                {
                    'uuid': base.child_uuid(deployable, 'handle', fn),
                    'attach_type': 'PCI',
                    'attach_info': self._attach_info(index, fn),
                    'in_use': False,
                }
                for fn in range(opts.num_accelerators)
            ]
            devices.append(
                {
                    'uuid': dev_uuid,
                    'type': self.device_type,
                    'vendor': opts.vendor,
                    'model': opts.model,
                    'std_board_info': json.dumps(
                        {
                            'product_id': opts.product,
                            'vendor_id': opts.vendor,
                            'class': self.device_type,
                        },
                        sort_keys=True,
                    ),
                    'vendor_board_info': json.dumps(
                        {'fake': True, 'index': index}, sort_keys=True
                    ),
                    'hostname': self.host,
                    'driver_name': self.name,
                    'deployables': [
                        {
                            'uuid': deployable,
                            'name': base.provider_name(
                                self.host, self.name, index
                            ),
                            'num_accelerators': opts.num_accelerators,
                            'rp_uuid': base.provider_uuid(self.host, dev_uuid),
                            'driver_name': self.name,
                            'attach_handles': handles,
                        }
                    ],
                }
            )
        return devices

    def _control(self):
        """The control file's object ({} without one); None while it
        does not parse (a writer may be between truncating and writing
        it)."""
        path = self.opts.control_file
        if not path:
            return {}
        try:
            with open(path) as f:
                control = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return None
        return control if isinstance(control, dict) else {}

    def _held_control(self, arq):
        """The control file's object once it no longer holds
        programming. A file that does not parse is read again (a write
        in progress), for up to :data:`UNREADABLE_POLLS` polls; then it
        counts as empty."""
        logged = False
        unreadable = 0
        while True:
            control = self._control()
            if control is None:
                unreadable += 1
                if unreadable > UNREADABLE_POLLS:
                    LOG.warning(
                        'Control file %s does not parse; ignoring it',
                        self.opts.control_file,
                    )
                    return {}
            elif not control.get('hold'):
                return control
            else:
                unreadable = 0
                if not logged:
                    LOG.info(
                        'Programming for ARQ %s on %s held by %s',
                        arq['uuid'],
                        self.host,
                        self.opts.control_file,
                    )
                    logged = True
            if self._halt.wait(HOLD_POLL):
                raise base.ProgramError('the agent is stopping')

    def program(self, device, attach_handle, arq):
        opts = self.opts
        if opts.program_seconds and self._halt.wait(opts.program_seconds):
            raise base.ProgramError('the agent is stopping')
        control = self._held_control(arq)
        if opts.fail_program:
            raise base.ProgramError(
                '%s refused the image (fail_program is set)' % device['model']
            )
        if control.get('fail') or self.host in (
            control.get('fail_hosts') or ()
        ):
            raise base.ProgramError(
                '%s on %s refused the image (control file %s)'
                % (
                    device['model'],
                    self.host,
                    os.path.basename(opts.control_file),
                )
            )
        with self._lock:
            holder = self.programmed.get(attach_handle['uuid'])
            if holder not in (None, arq['uuid']):
                raise base.ProgramError(
                    'attach handle %s is programmed for ARQ %s'
                    % (attach_handle['uuid'], holder)
                )
            self.programmed[attach_handle['uuid']] = arq['uuid']
        LOG.debug(
            'Programmed %s handle %s for ARQ %s',
            device['uuid'],
            attach_handle['uuid'],
            arq['uuid'],
        )

    def release(self, device, attach_handle, arq):
        with self._lock:
            if self.programmed.get(attach_handle['uuid']) == arq['uuid']:
                del self.programmed[attach_handle['uuid']]

    def halt(self):
        self._halt.set()


class FakeFPGADriver(FakeDriver):
    """``fake_fpga``: FPGA devices with inventory of resource class FPGA."""

    name = 'fake_fpga'
    device_type = 'FPGA'
    resource_class = 'FPGA'
    pci_bus_base = 0x5E


class FakeGPUDriver(FakeDriver):
    """``fake_gpu``: GPUs with inventory of resource class PGPU."""

    name = 'fake_gpu'
    device_type = 'GPU'
    resource_class = 'PGPU'
    pci_bus_base = 0x3B
