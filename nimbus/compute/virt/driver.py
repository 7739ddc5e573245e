"""The interface between the compute agent and a hypervisor."""

import abc

# resource class -> ([compute] option, its initial_* option)
RATIO_OPTIONS = {
    'VCPU': ('cpu_allocation_ratio', 'initial_cpu_allocation_ratio'),
    'MEMORY_MB': ('ram_allocation_ratio', 'initial_ram_allocation_ratio'),
    'DISK_GB': ('disk_allocation_ratio', 'initial_disk_allocation_ratio'),
}


def allocation_ratio(conf, resource_class, inventory=None):
    """The allocation ratio to report for ``resource_class``, Nova's rule:

    - ``[compute] <rc>_allocation_ratio`` set (and not 0.0, which Nova also
      reads as unset): that value, on every update;
    - unset: the ratio placement already has in ``inventory`` (the
      provider's current inventory), so an operator's change made in
      placement stands;
    - unset and no inventory of that class yet: ``initial_*``.
    """
    option, initial = RATIO_OPTIONS[resource_class]
    configured = getattr(conf.compute, option)
    if configured:
        return configured
    current = (inventory or {}).get(resource_class) or {}
    if current.get('allocation_ratio') is not None:
        return current['allocation_ratio']
    return getattr(conf.compute, initial)


class ComputeDriver(abc.ABC):
    """A hypervisor as the compute agent sees it.

    Every hook below is called by the agent; an exception from ``spawn`` is
    a failed build (the agent reschedules); an exception from the others is
    logged and the agent carries on, except ReshapeNeeded/ReshapeFailed at
    startup, which stop the service.
    """

    def __init__(self, conf, host):
        self.conf = conf
        self.host = host

    def init_host(self):  # noqa: B027 - optional hook, no-op by default
        """Called once before the agent serves RPC. Default: nothing."""

    @abc.abstractmethod
    def node_facts(self):
        """Dict of hypervisor facts for the compute node record: vcpus,
        memory_mb, local_gb, hypervisor_type, hypervisor_version, cpu_info,
        numa_topology, pci_stats, supported_instances, and optionally
        stats (free-form ``{name: string}``; none when absent)."""

    @abc.abstractmethod
    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        """Make ``provider_tree`` describe this node's resources.

        With ``allocations`` None the driver must not move inventory between
        providers; if it needs to, it raises ReshapeNeeded. Given
        ``allocations`` (consumer -> allocation record), it moves them in
        place to match the new tree.
        """

    @abc.abstractmethod
    def spawn(self, instance, allocations, accel_info=None, power_on=True):
        """Build the guest of ``instance`` (an Instance, the cell's record
        as the build started). Raise to fail the build. Without
        ``power_on`` the guest is defined but never started (it ends shut
        down): a stopped server's move to this host."""

    def prep_resize(self, instance_uuid, flavor):  # noqa: B027 - optional hook, no-op by default
        """The destination's check before a resize or cold migrate takes
        the guest with ``flavor`` (a flavor dict); raise to refuse it
        (the move goes to the next alternate)."""

    def check_can_live_migrate_destination(self, instance_uuid, flavor):  # noqa: B027 - optional hook, no-op by default
        """Raise when this host cannot take the guest of a live migration
        (the destination's pre-check). Default: it can."""

    @abc.abstractmethod
    def destroy(self, instance_uuid):
        """Remove the guest; absent guests are fine."""

    @abc.abstractmethod
    def list_instances(self):
        """uuids of the guests this hypervisor runs."""

    def get_host_uptime(self):
        """The host's uptime, as the ``uptime`` command prints it (Nova's
        os-hypervisors uptime shows it). Default: the driver cannot tell
        (NotImplementedError; the API answers 501)."""
        raise NotImplementedError()

    # Actions on a guest that stays on this host (issue 24, section 1).
    # Each raises GuestNotFound (nimbus.compute.exception) for a guest the
    # driver does not run; the defaults cannot do them.

    def power_off(self, instance_uuid):
        """Shut the guest down."""
        raise NotImplementedError()

    def power_on(self, instance_uuid):
        """Start a guest that is shut down."""
        raise NotImplementedError()

    def reboot(self, instance_uuid, reboot_type):
        """Reboot the guest (``SOFT`` or ``HARD``); it ends running."""
        raise NotImplementedError()

    def pause(self, instance_uuid):
        raise NotImplementedError()

    def unpause(self, instance_uuid):
        raise NotImplementedError()

    def suspend(self, instance_uuid):
        raise NotImplementedError()

    def resume(self, instance_uuid):
        raise NotImplementedError()

    def rescue(self, instance_uuid, rescue_image_ref):
        """Boot the guest from ``rescue_image_ref`` with its disk
        attached."""
        raise NotImplementedError()

    def unrescue(self, instance_uuid):
        raise NotImplementedError()

    def rebuild(self, instance_uuid, image_ref, preserve_ephemeral, power_on):
        """Re-create the guest's root disk from ``image_ref`` (keeping the
        ephemeral disk with ``preserve_ephemeral``); it ends running, or
        shut down without ``power_on``."""
        raise NotImplementedError()

    def snapshot(self, instance_uuid, image_id):
        """Copy the guest's root disk into image ``image_id``."""
        raise NotImplementedError()

    def set_admin_password(self, instance_uuid, password):
        raise NotImplementedError()

    def get_console_output(self, instance_uuid):
        """The guest's console log (text)."""
        raise NotImplementedError()

    def get_diagnostics(self, instance_uuid):
        """The guest's diagnostics, Nova's 2.48 shape (a dict)."""
        raise NotImplementedError()

    def power_state(self, instance_uuid):
        """The guest's power state (Nova's numbers; NOSTATE when it has
        none here)."""
        raise NotImplementedError()
