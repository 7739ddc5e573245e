"""The conductor's accelerator step: create a server's ARQs, match each to
the device provider placement chose for it, and bind them (the binder
itself is :mod:`nimbus.common.clients.arq_binding`, shared with a move's
destination compute); and a move's request spec asking for its flavor's
device profile.
"""

from nimbus.common.clients import accelerator as accelerator_client
from nimbus.common.clients.arq_binding import AcceleratorBindError
from nimbus.common.clients.arq_binding import AcceleratorBinder
from nimbus.common.clients.arq_binding import group_providers
from nimbus.common.clients.arq_binding import match_arqs

__all__ = [
    'AcceleratorBindError',
    'AcceleratorBinder',
    'bind_for_build',
    'group_providers',
    'match_arqs',
    'swap_profile',
]


def bind_for_build(binder, ctxt, instance_uuid, request_spec, selection):
    """The ARQ uuids to cast the build of ``instance_uuid`` with: none
    without a device profile;
    AcceleratorBindError when the request names a profile but there is no
    accelerator service (the server must not boot without its devices)."""
    if not request_spec.device_profile:
        return []
    if binder is None:
        raise AcceleratorBindError(
            'device profile %s requested but no accelerator service is '
            'configured' % request_spec.device_profile
        )
    return binder.create_and_bind(ctxt, instance_uuid, request_spec, selection)


def swap_profile(binder, ctxt, spec, flavor):
    """A move's request spec asks for the device profile of ``flavor``
    (a flavor dict: a resize's new one, or the server's own for a cold
    migrate): its groups replace the stored ones when the profile
    differs. AcceleratorBindError when the profile cannot be resolved
    (the move must not lose the server's devices)."""
    profile = ((flavor or {}).get('extra_specs') or {}).get(
        'accel:device_profile'
    ) or None
    if profile == spec.device_profile:
        return spec
    spec.device_profile = profile
    spec.requested_resources = []
    if profile is None:
        return spec
    if binder is None:
        raise AcceleratorBindError(
            'device profile %s requested but no accelerator service is '
            'configured' % profile
        )
    try:
        spec.requested_resources = binder.client.get_device_request_groups(
            ctxt, profile
        )
    except (
        accelerator_client.AcceleratorError,
        accelerator_client.DeviceProfileError,
    ) as exc:
        raise AcceleratorBindError(
            'could not resolve device profile %s: %s' % (profile, exc)
        ) from exc
    return spec
