"""Creating a server's ARQs, matching each to the device provider
placement chose for it, and binding them: the conductors' step for a
build (:mod:`nimbus.conductor.accelerators`) and a move's destination
compute's (:mod:`nimbus.compute.move_arqs`).

Placement's allocation request carries ``mappings``: request group suffix
-> provider uuids. The Nth group of the flavor's device profile is asked
for as ``resources_device_profile_<N>``, so its mapping key is
``_device_profile_<N>`` (or ``device_profile_<N>``). An ARQ created from
that group has ``device_profile_group_id`` N; it is bound to the (first
unused) provider of that group on the chosen host. The bind is
asynchronous: the accelerator service answers 202 and later reports each
ARQ with an ``accelerator-request-bound`` event, which the compute awaits.
"""

from oslo_log import log as logging

from nimbus.common.clients import accelerator as accelerator_client

LOG = logging.getLogger(__name__)


class AcceleratorBindError(Exception):
    """The ARQs could not be created or bound; none are left behind."""


def group_providers(allocation_request):
    """``{group index: [provider uuid, ..]}`` from an allocation request's
    ``mappings`` (device-profile groups only)."""
    out = {}
    mappings = (allocation_request or {}).get('mappings') or {}
    prefix = accelerator_client.REQUESTER_PREFIX
    for suffix, providers in mappings.items():
        name = suffix.lstrip('_')
        if not name.startswith(prefix):
            continue
        try:
            index = int(name[len(prefix) :])
        except ValueError:
            continue
        out[index] = list(providers or [])
    return out


def match_arqs(arqs, allocation_request, fallback_rp=None):
    """``{arq uuid: device rp uuid}``: each ARQ to a provider of its group
    from ``mappings``. A group asking for several devices on one provider
    gives all its ARQs that provider. Without mappings for a group
    (placement before 1.34), ``fallback_rp`` if given. Raises
    AcceleratorBindError when an ARQ's group has no provider."""
    providers = group_providers(allocation_request)
    used = {}
    out = {}
    for arq in arqs:
        index = int(arq.get('device_profile_group_id') or 0)
        choices = providers.get(index)
        if not choices:
            if fallback_rp is None:
                raise AcceleratorBindError(
                    'no device provider in the allocation for ARQ %s '
                    '(group device_profile_%d)' % (arq['uuid'], index)
                )
            out[arq['uuid']] = fallback_rp
            continue
        position = used.get(index, 0)
        out[arq['uuid']] = choices[position % len(choices)]
        used[index] = position + 1
    return out


class AcceleratorBinder:
    """``AcceleratorBinder(client)``: one per conductor, the client
    injected (an :class:`~nimbus.common.clients.accelerator.
    AcceleratorClient`)."""

    def __init__(self, client):
        self.client = client

    def create_and_bind(self, ctxt, instance_uuid, request_spec, selection):
        """Create the ARQs of the request's device profile, bind them to
        the selected host and the instance; their uuids (in creation
        order). On any failure the ARQs made here are deleted and
        AcceleratorBindError is raised."""
        profile = request_spec.device_profile
        if not profile:
            return []
        return self.bind_profile(ctxt, instance_uuid, profile, selection)

    def bind_profile(self, ctxt, instance_uuid, profile, selection):
        """The same for device profile ``profile`` (a resize's new
        flavor's on its destination, :mod:`nimbus.compute.move_arqs`)."""
        try:
            arqs = self.client.create_arqs(ctxt, profile)
        except accelerator_client.AcceleratorError as exc:
            raise AcceleratorBindError(
                'could not create accelerator requests for device profile '
                '%s: %s' % (profile, exc)
            ) from exc
        uuids = [arq['uuid'] for arq in arqs]
        try:
            matched = match_arqs(arqs, selection.allocation_request)
            hostname = selection.service_host
            self.client.bind_arqs(
                ctxt,
                {
                    arq_uuid: {
                        'hostname': hostname,
                        'device_rp_uuid': rp_uuid,
                        'instance_uuid': instance_uuid,
                    }
                    for arq_uuid, rp_uuid in matched.items()
                },
            )
        except (
            accelerator_client.AcceleratorError,
            AcceleratorBindError,
        ) as exc:
            self.delete(ctxt, uuids)
            raise AcceleratorBindError(
                'could not bind accelerator requests %s on %s: %s'
                % (', '.join(uuids), selection.service_host, exc)
            ) from exc
        LOG.info(
            'Instance %s: binding ARQs %s on %s',
            instance_uuid,
            ', '.join(uuids),
            selection.service_host,
        )
        return uuids

    def delete(self, ctxt, arq_uuids):
        """Delete ARQs, logging (not raising) a failure."""
        try:
            self.client.delete_arqs(ctxt, arq_uuids)
        except accelerator_client.AcceleratorError:
            LOG.exception('Could not delete ARQs %s', arq_uuids)

    def delete_for_instance(self, ctxt, instance_uuid):
        try:
            self.client.delete_arqs_for_instance(ctxt, instance_uuid)
        except accelerator_client.AcceleratorError:
            LOG.exception(
                'Could not delete the ARQs of instance %s', instance_uuid
            )
