"""The accelerator service: device profiles, accelerator requests (ARQs),
the devices the agents report, and the binder that programs devices and
tells nimbus-api when an ARQ is bound.

Cyborg's wire shapes (``/v2/device_profiles``, ``/v2/accelerator_requests``,
``/v2/devices``, ``/v2/deployables``) so tooling written for Cyborg works.
Public entry points: :func:`nimbus.accelerator.service.build_accelerator_service`
and :mod:`nimbus.accelerator.api.wsgi` (served under gunicorn or uWSGI as
``nimbus.wsgi.accelerator:application``).
"""
