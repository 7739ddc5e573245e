"""The interface between the compute agent and a hypervisor."""

import abc


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

    def init_host(self):
        """Called once before the agent serves RPC. Default: nothing."""

    @abc.abstractmethod
    def node_facts(self):
        """Dict of hypervisor facts for the compute node record: vcpus,
        memory_mb, local_gb, hypervisor_type, hypervisor_version, cpu_info,
        numa_topology, pci_stats, supported_instances."""

    @abc.abstractmethod
    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        """Make ``provider_tree`` describe this node's resources.

        With ``allocations`` None the driver must not move inventory between
        providers; if it needs to, it raises ReshapeNeeded. Given
        ``allocations`` (consumer -> allocation record), it moves them in
        place to match the new tree.
        """

    @abc.abstractmethod
    def spawn(self, instance, allocations, accel_info=None):
        """Build the guest. Raise to fail the build."""

    @abc.abstractmethod
    def destroy(self, instance_uuid):
        """Remove the guest; absent guests are fine."""

    @abc.abstractmethod
    def list_instances(self):
        """uuids of the guests this hypervisor runs."""
