"""nimbus-accelerator-agent: the accelerator agent of one or many hosts.

:class:`AcceleratorAgent` is one host: its drivers, the devices they last
found, their report to the accelerator service and to placement, and the
programming of attach handles for the service's binder (RPC, see
:mod:`.manager`). :func:`.group.build_agents` composes N of them, one
real host or the simulated hosts of ``--simulated-hosts N``, and makes
their first reports in bulk (:mod:`.group`).

Every report does, in this order:

1. discovery by every enabled driver (a driver that fails skips the whole
   report: reporting a partial picture would remove the providers of the
   devices it failed to list);
2. ``reporter.report_devices(ctxt, host, devices)`` to the accelerator
   service (first, so the service knows a device before placement offers
   it to the scheduler); a failure is logged and the next report retries;
3. the placement report (:mod:`.placement_report`). While the compute
   node's provider does not exist yet (or placement fails) it is retried
   every ``[accelerator_agent] placement_retry_interval`` seconds.
"""

import copy
import threading
import time

from oslo_log import log as logging

from nimbus.accelerator.agent import exception
from nimbus.accelerator.agent import manager
from nimbus.accelerator.agent import placement_report
from nimbus.accelerator import drivers as drivers_mod
from nimbus.accelerator.drivers import base
from nimbus.common import context as nimbus_context
from nimbus.common import exception as common_exc

LOG = logging.getLogger(__name__)

BINARY = 'nimbus-accelerator-agent'


class NullDeviceReporter:
    """A reporter for an agent without an accelerator service (placement
    only): accepts and forgets the devices."""

    def report_devices(self, ctxt, host, devices):
        LOG.debug(
            'No accelerator service: %d devices of %s reported to '
            'placement only',
            len(devices),
            host,
        )


class AcceleratorAgent:
    """The agent of one host.

    ``placement`` is a PlacementClient; ``reporter`` has
    ``report_devices(ctxt, host, devices)`` (in production
    ``nimbus.accelerator.rpcapi.AcceleratorAPI``); ``drivers`` is
    ``[(name, driver)]`` (default: ``[accelerator_agent] enabled_drivers``
    loaded by stevedore for ``host``).
    """

    def __init__(self, conf, host, placement, reporter, drivers=None):
        self.conf = conf
        self.host = host
        self.reporter = reporter
        self.drivers = (
            drivers
            if drivers is not None
            else drivers_mod.load(
                conf, host, conf.accelerator_agent.enabled_drivers
            )
        )
        self.placement = placement_report.PlacementReporter(placement, host)
        self.manager = manager.AgentManager(self)
        # rp_uuid -> (driver, device, deployable), replaced whole by each
        # discovery.
        self._by_provider = {}
        self._found = []
        self._placement_pending = True
        self._lock = threading.Lock()
        # The devices the last complete report sent to the service and to
        # placement, and when (monotonic); None: none yet.
        self._reported = None
        self._reported_at = None
        # The devices a report for many hosts sent the service before
        # this host started (:meth:`sent`): the first report does not
        # send them again. One use only.
        self._sent = None

    def sent(self, devices):
        """``devices`` (this host's discovery) reached the service in a
        report for many hosts
        (:meth:`.group.AgentGroup.start`): the next report
        sends them only if discovery then finds others."""
        self._sent = copy.deepcopy(devices)

    # -- discovery and reports --------------------------------------------

    def discover(self):
        """Ask every driver; remember and return the devices. Raises what
        a driver raised (nothing is remembered then)."""
        found, by_provider = [], {}
        for _name, driver in self.drivers:
            devices = driver.discover()
            found.append((driver, devices))
            for device in devices:
                for deployable in device['deployables']:
                    by_provider[deployable['rp_uuid']] = (
                        driver,
                        device,
                        deployable,
                    )
        self._found, self._by_provider = found, by_provider
        return self.devices

    @property
    def devices(self):
        """The devices of the last discovery (device dicts)."""
        return [
            device for _driver, devices in self._found for device in devices
        ]

    def providers(self):
        """What placement should hold for the devices of the last
        discovery (:class:`~.placement_report.DeviceProvider` list)."""
        return [
            provider
            for driver, devices in self._found
            for provider in placement_report.providers_of(driver, devices)
        ]

    def report(self):
        """Discover and report to the service and to placement (the
        periodic task; also the startup). Failures are logged; returns
        the placement :class:`~.placement_report.ReportResult` or None."""
        ctxt = nimbus_context.get_admin_context()
        with self._lock:
            try:
                devices = self.discover()
            except Exception:
                LOG.exception(
                    'Device discovery on %s failed; reporting again in %ss',
                    self.host,
                    self.conf.accelerator_agent.report_interval,
                )
                return None
            presented, self._sent = self._sent, None
            sent = (
                presented is not None and devices == presented
            ) or self._send_devices(ctxt, devices)
            result = self._report_placement(ctxt)
            if sent and result is not None:
                self._reported = copy.deepcopy(devices)
                self._reported_at = time.monotonic()
            else:
                self._reported = None
            return result

    def periodic_report(self):
        """The periodic task: :meth:`report`, skipped while it would send
        what the last complete report sent (``[accelerator_agent]
        refresh_interval``). Returns the report's result, or None."""
        refresh = self.conf.accelerator_agent.refresh_interval
        reported, at = self._reported, self._reported_at
        if (
            refresh > 0
            and reported is not None
            and not (
                self._placement_pending or time.monotonic() - at >= refresh
            )
        ):
            with self._lock:
                try:
                    devices = self.discover()
                except Exception:  # noqa: BLE001 - the complete report below logs it
                    devices = None
            if devices is not None and devices == reported:
                LOG.debug('Devices of %s unchanged: no report', self.host)
                return None
        return self.report()

    def _send_devices(self, ctxt, devices):
        """The devices to the accelerator service; False when that failed
        (logged; the next report sends them again)."""
        try:
            self.reporter.report_devices(ctxt, self.host, devices)
        except Exception as exc:  # noqa: BLE001 - any failure: reported again next time
            LOG.warning(
                'Reporting %d devices of %s to the accelerator '
                'service failed (%s: %s); trying again in %ss',
                len(devices),
                self.host,
                type(exc).__name__,
                exc,
                self.conf.accelerator_agent.report_interval,
            )
            return False
        return True

    def _report_placement(self, ctxt):
        try:
            result = self.placement.report(ctxt, self.providers())
        except placement_report.RootProviderNotFound as exc:
            LOG.info('Devices of %s not in placement yet: %s', self.host, exc)
            self._placement_pending = True
            return None
        except common_exc.PlacementError as exc:
            LOG.warning(
                'Reporting the devices of %s to placement failed: %s',
                self.host,
                exc,
            )
            self._placement_pending = True
            return None
        self._placement_pending = False
        return result

    @property
    def placement_pending(self):
        """True until a placement report of the current devices worked."""
        return self._placement_pending

    def retry_placement(self):
        """The placement report again, when the last one did not happen."""
        if not self._placement_pending:
            return None
        with self._lock:
            if not self._placement_pending:
                return None
            return self._report_placement(nimbus_context.get_admin_context())

    # -- the HostGroup protocol -----------------------------------------

    def start(self):
        self.report()
        return self

    @property
    def endpoints(self):
        return [self.manager]

    def periodic_tasks(self):
        """``[(interval, callable)]``: the report (skipped while nothing
        changed, :meth:`periodic_report`), and the retry of a placement
        report that could not be made."""
        group = self.conf.accelerator_agent
        return [
            (group.report_interval, self.periodic_report),
            (group.placement_retry_interval, self.retry_placement),
        ]

    def stop(self):
        for _name, driver in self.drivers:
            driver.halt()

    kill = stop

    # -- programming -----------------------------------------------------

    def _locate(self, arq):
        """(driver, device, attach_handle) of ``arq``, or ProgrammingFailed
        saying what is not on this host."""
        rp_uuid = arq['device_rp_uuid']
        found = self._by_provider.get(rp_uuid)
        if found is None:
            raise self._failed(
                arq,
                rp_uuid,
                'no device with resource provider %s on this host' % rp_uuid,
            )
        driver, device, deployable = found
        handle_uuid = arq['attach_handle']['uuid']
        for handle in deployable['attach_handles']:
            if handle['uuid'] == handle_uuid:
                return driver, device, handle
        raise self._failed(
            arq,
            device['uuid'],
            'attach handle %s is not one of the device' % handle_uuid,
        )

    def _failed(self, arq, device, reason):
        return exception.ProgrammingFailed(
            device=device, host=self.host, arq=arq['uuid'], reason=reason
        )

    def program(self, ctxt, arq):
        """Program the attach handle of ``arq``; raises ProgrammingFailed."""
        driver, device, handle = self._locate(arq)
        try:
            driver.program(device, handle, arq)
        except base.ProgramError as exc:
            LOG.warning(
                'Programming %s on %s for ARQ %s failed: %s',
                device['uuid'],
                self.host,
                arq['uuid'],
                exc,
            )
            raise self._failed(
                arq, '%s (%s)' % (device['uuid'], device['model']), str(exc)
            ) from exc
        LOG.info(
            'Programmed device %s on %s for ARQ %s of instance %s',
            device['uuid'],
            self.host,
            arq['uuid'],
            arq.get('instance_uuid'),
        )

    def release(self, ctxt, arq):
        """Release the attach handle of ``arq`` (a failure is logged)."""
        try:
            driver, device, handle = self._locate(arq)
            driver.release(device, handle, arq)
        except Exception as exc:  # noqa: BLE001 - a driver's release failure is logged, not raised
            LOG.warning(
                'Releasing ARQ %s on %s: %s', arq.get('uuid'), self.host, exc
            )
