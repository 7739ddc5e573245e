"""The host manager's instance events: instances added to, changed on,
deleted from and synced with a host (``update_instance_info``,
``delete_instance_info``, ``sync_instance_info``), which the affinity
filters and the instance-count checks read. :class:`InstanceEvents` is a
base of :class:`~nimbus.scheduler.host_manager.HostManager`, which holds
the state these methods change (``_by_host``, ``_by_uuid``, ``_groups``,
``_gone_instances``) and applies each event through ``_submit``."""

from __future__ import annotations

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class InstanceEvents:
    """Needs HostManager's ``source``, ``_submit``, ``_by_host``,
    ``_by_uuid``, ``_groups`` and ``_gone_instances``."""

    def update_instance_info(self, host: str, instances: list[dict]) -> None:
        """Instances were added to (or changed on) a host. Each is ``{"uuid",
        "flavor_id", "group_uuid", "image_ref", "image_properties"}``; without
        ``image_properties`` they are looked up by ``image_ref`` (before queueing, so
        no lookup runs while a decision waits)."""
        lookup = getattr(self.source, 'image_properties', None)
        resolved = []
        for inst in instances:
            if (
                inst.get('image_properties') is None
                and inst.get('image_ref')
                and lookup
            ):
                try:
                    props = lookup(inst['image_ref'])
                except Exception:  # a hint; the next reload has it
                    LOG.warning(
                        'could not read image %s',
                        inst['image_ref'],
                        exc_info=True,
                    )
                    props = None
                inst = dict(inst, image_properties=props or {})
            resolved.append(inst)
        self._submit(self._update_instance_info, host, resolved)

    def _update_instance_info(self, host: str, instances: list[dict]) -> None:
        for hs in self._by_host.get(host, [])[:1]:
            for inst in instances:
                if inst['uuid'] in self._gone_instances:
                    LOG.debug('stale update of deleted %s', inst['uuid'])
                    continue
                hs.add_instance(inst)

    def delete_instance_info(self, host: str, instance_uuid: str) -> None:
        """An instance was deleted (or left the host)."""
        self._submit(self._delete_instance_info, host, instance_uuid)

    def _delete_instance_info(
        self, host: str | None, instance_uuid: str
    ) -> None:
        self._gone_instances.bury(instance_uuid)
        states = self._by_host.get(host, []) if host else []
        if not any(instance_uuid in hs.instances for hs in states):
            # No host given, or the instance moved since: look everywhere.
            states = [
                hs
                for hs in self._by_uuid.values()
                if instance_uuid in hs.instances
            ]
        for hs in states:
            hs.remove_instance(instance_uuid)
        for group in self._groups.values():
            members = group.get('members') or []
            if instance_uuid in members:
                group['members'] = [m for m in members if m != instance_uuid]

    def sync_instance_info(self, host: str, instance_uuids: list[str]) -> None:
        """The full list of instance uuids on a host: drop the ones it no longer has."""
        self._submit(self._sync_instance_info, host, instance_uuids)

    def _sync_instance_info(
        self, host: str, instance_uuids: list[str]
    ) -> None:
        keep = set(instance_uuids)
        states = self._by_host.get(host, [])
        for hs in states:
            for u in [u for u in hs.instances if u not in keep]:
                hs.remove_instance(u)
        if states:
            # Instances the cache missed count too (instance-count, same/different
            # host filters); their details come with the next reload.
            known = {u for hs in states for u in hs.instances}
            for u in instance_uuids:
                if u not in known and u not in self._gone_instances:
                    states[0].add_instance({'uuid': u})
