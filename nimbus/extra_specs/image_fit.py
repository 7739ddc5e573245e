"""Does an image fit a host? The image properties ImagePropertiesFilter
reads (architecture, hypervisor type, VM mode, requested hypervisor
version) and the traits an image requires or forbids (``trait:NAME``).

Shared by the scheduler's ImagePropertiesFilter and the compute API's
rebuild, which re-checks a new image against the server's own host as
Nova does (a host that no longer fits refuses the rebuild).
"""

from __future__ import annotations

from nimbus.extra_specs.ops import Requirement

ARCH_KEYS = ('hw_architecture', 'architecture')
HV_KEYS = ('img_hv_type', 'hypervisor_type')
MODE_KEYS = ('hw_vm_mode', 'vm_mode')
HV_ALIASES = {'kvm': 'qemu'}


def _first(props, keys):
    for k in keys:
        if props.get(k):
            return str(props[k]).lower()
    return None


def wanted(props):
    """``(arch, hv_type, vm_mode, Requirement or None)`` the image asks
    for (lower case; None where it asks nothing)."""
    props = props or {}
    arch, hv, mode = (
        _first(props, ARCH_KEYS),
        _first(props, HV_KEYS),
        _first(props, MODE_KEYS),
    )
    hv = HV_ALIASES.get(hv, hv)
    version = props.get('img_hv_requested_version')
    return arch, hv, mode, (Requirement(version) if version else None)


def asks_anything(want):
    return any(want)


def fits(want, supported_instances, hypervisor_version):
    """Does a host with these ``supported_instances`` triples and this
    ``hypervisor_version`` satisfy ``want`` (from :func:`wanted`)?"""
    arch, hv, mode, version = want
    if version is not None and not version.matches(hypervisor_version):
        return False
    if not (arch or hv or mode):
        return True
    for entry in supported_instances or ():
        h_arch, h_hv, h_mode = (list(entry) + [None, None, None])[:3]
        h_hv = HV_ALIASES.get(str(h_hv).lower(), str(h_hv).lower())
        if arch and str(h_arch).lower() != arch:
            continue
        if hv and h_hv != hv:
            continue
        if mode and str(h_mode).lower() != mode:
            continue
        return True
    return False


def reject_reason(want, supported_instances, hypervisor_version):
    arch, hv, mode, version = want
    if version is not None and not version.matches(hypervisor_version):
        return 'hypervisor_version %s does not match %r' % (
            hypervisor_version,
            version.text,
        )
    return 'image needs %s, host supports %s' % (
        '/'.join(x or '*' for x in (arch, hv, mode)),
        supported_instances or 'nothing',
    )


def traits(props):
    """``(required, forbidden)`` trait names of the image's
    ``trait:NAME=required|forbidden`` properties."""
    required, forbidden = set(), set()
    for key, value in (props or {}).items():
        if not key.startswith('trait:'):
            continue
        name = key[len('trait:') :]
        if str(value).lower() == 'required':
            required.add(name)
        elif str(value).lower() == 'forbidden':
            forbidden.add(name)
    return required, forbidden
