"""A small client of the accelerator API (Cyborg's wire format), as the
compute API needs it: a flavor's ``accel:device_profile`` names a device
profile, whose groups become request groups of the RequestSpec.

It also creates, binds (JSON-patch ``PATCH``, answered 202), reads and
deletes accelerator requests (ARQs) for the conductors and the compute,
retrying transient errors (unreachable, 502/503/504). With
``[accelerator_client] endpoint`` unset, :func:`from_conf` returns None and the compute API refuses
servers whose flavor asks for a device profile (they must not boot without
their accelerators).

A device profile (``GET {endpoint}/device_profiles?name=<name>``)::

    {"device_profiles": [{"name": "gpu-nvidia-t4", "groups": [
        {"resources:PGPU": "1", "trait:CUSTOM_GPU_PRODUCT_ID_1EB8": "required"}]}]}

Its Nth group (in the profile's order, from 0) becomes the request group
``{"requester_id": "device_profile_<N>", "resources": {"PGPU": 1},
"required_traits": ["CUSTOM_GPU_PRODUCT_ID_1EB8"], "forbidden_traits": []}``.
Other keys of a group (``accel:...``) are for the accelerator service and
ignored here.
"""

import requests
import tenacity
from oslo_config import cfg
from oslo_log import log as logging

from nimbus.common.clients import auth

LOG = logging.getLogger(__name__)

GROUP = 'accelerator_client'
REQUESTER_PREFIX = 'device_profile_'

ACCELERATOR_CLIENT_OPTS = [
    cfg.URIOpt(
        'endpoint',
        default=None,
        help='Base URL of the accelerator API, version included '
        '(e.g. http://127.0.0.1:6666/v2). Unset (the default): '
        'there is no accelerator service, and the compute API '
        'refuses servers whose flavor names a device profile '
        '(accel:device_profile) with a 400.',
    ),
    cfg.StrOpt(
        'auth_strategy',
        default='noauth2',
        choices=['noauth2', 'keystone'],
        help='noauth2: send the token "nimbus:service" with roles '
        'admin,service. keystone: authenticate through a '
        'keystoneauth session loaded from this group (auth_type '
        "and the plugin's options, or auth_section).",
    ),
    cfg.IntOpt(
        'timeout',
        default=30,
        min=1,
        help='Seconds before an accelerator API request times out.',
    ),
    cfg.IntOpt(
        'retries',
        default=3,
        min=0,
        help='Retries of an accelerator API request after a '
        'transient error (unreachable, 502, 503, 504).',
    ),
]

TRANSIENT = (502, 503, 504)


class AcceleratorError(Exception):
    """The accelerator API could not be reached or answered an error."""


class TransientError(AcceleratorError):
    """Unreachable or 502/503/504: worth retrying."""


class DeviceProfileError(ValueError):
    """The device profile does not exist or its groups are malformed."""


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(ACCELERATOR_CLIENT_OPTS, group=GROUP)
    auth.register_opts(conf, GROUP)


def list_opts():
    return [(GROUP, ACCELERATOR_CLIENT_OPTS + auth.list_opts())]


def request_groups(groups):
    """Device-profile groups -> RequestSpec ``requested_resources`` entries.

    ``resources:<RC>`` keys give amounts (positive integers), ``trait:<T>``
    keys ``required`` or ``forbidden`` traits; other keys are ignored.
    Raises DeviceProfileError for a malformed group."""
    out = []
    for index, group in enumerate(groups):
        if not isinstance(group, dict):
            raise DeviceProfileError('group %d is not an object' % index)
        resources, required, forbidden = {}, [], []
        for key, value in group.items():
            if key.startswith('resources:'):
                rc = key[len('resources:') :]
                try:
                    amount = int(str(value))
                except ValueError:
                    amount = 0
                if not rc or amount < 1:
                    raise DeviceProfileError(
                        'group %d: %s=%r is not a positive amount'
                        % (index, key, value)
                    )
                resources[rc] = amount
            elif key.startswith('trait:'):
                trait = key[len('trait:') :]
                if value == 'required':
                    required.append(trait)
                elif value == 'forbidden':
                    forbidden.append(trait)
                else:
                    raise DeviceProfileError(
                        "group %d: %s must be 'required' or 'forbidden', "
                        'not %r' % (index, key, value)
                    )
        if not resources:
            raise DeviceProfileError('group %d asks for no resources' % index)
        out.append(
            {
                'requester_id': '%s%d' % (REQUESTER_PREFIX, index),
                'resources': resources,
                'required_traits': sorted(required),
                'forbidden_traits': sorted(forbidden),
            }
        )
    return out


class AcceleratorClient:
    """``AcceleratorClient(endpoint, session=None, timeout=30)``; ``session``
    is any ``requests.Session``."""

    def __init__(
        self,
        endpoint,
        session=None,
        timeout=30,
        auth_strategy='noauth2',
        retries=3,
        retry_wait=0.5,
    ):
        self.endpoint = endpoint.rstrip('/')
        self.session = session or requests.Session()
        self.timeout = timeout
        self.auth_strategy = auth_strategy
        self.retries = retries
        self.retry_wait = retry_wait

    def _request(self, ctxt, method, path, ok=(200,), **kwargs):
        """One request, retried on transient errors; the response.
        Other errors raise AcceleratorError (404 included)."""
        headers = self._headers(ctxt)
        if 'json' in kwargs:
            headers['Content-Type'] = 'application/json'

        @tenacity.retry(
            retry=tenacity.retry_if_exception_type(TransientError),
            stop=tenacity.stop_after_attempt(self.retries + 1),
            wait=tenacity.wait_exponential(multiplier=self.retry_wait, max=10),
            reraise=True,
        )
        def attempt():
            try:
                response = self.session.request(
                    method,
                    self.endpoint + path,
                    headers=headers,
                    timeout=self.timeout,
                    **kwargs,
                )
            except requests.RequestException as exc:
                raise TransientError(
                    'accelerator API unreachable: %s' % exc
                ) from exc
            if response.status_code in TRANSIENT:
                raise TransientError(
                    'accelerator API answered %d' % response.status_code
                )
            return response

        response = attempt()
        if response.status_code not in ok:
            raise AcceleratorError(
                '%s %s: accelerator API answered %d: %s'
                % (method, path, response.status_code, response.text[:300])
            )
        return response

    @staticmethod
    def _arqs(response):
        try:
            arqs = response.json()['arqs']
        except (ValueError, KeyError, TypeError) as exc:
            raise AcceleratorError(
                'accelerator API answered an unexpected '
                'body for accelerator requests'
            ) from exc
        if not isinstance(arqs, list):
            raise AcceleratorError(
                'accelerator API answered arqs that are not a list'
            )
        return arqs

    def create_arqs(self, ctxt, device_profile_name):
        """New unbound ARQs for a profile (``POST /accelerator_requests``):
        one per device a group asks for, each with its
        ``device_profile_group_id``."""
        response = self._request(
            ctxt,
            'POST',
            '/accelerator_requests',
            ok=(200, 201),
            json={'device_profile_name': device_profile_name},
        )
        return self._arqs(response)

    def bind_arqs(self, ctxt, bindings):
        """Bind ARQs by JSON patch (``PATCH /accelerator_requests``);
        ``bindings`` maps an ARQ uuid to ``{'hostname', 'device_rp_uuid',
        'instance_uuid'}``. The service answers 202 and binds in the
        background; it reports each ARQ by an accelerator-request-bound
        event."""
        patch = {}
        for arq_uuid, binding in bindings.items():
            patch[arq_uuid] = [
                {'path': '/' + field, 'op': 'add', 'value': binding[field]}
                for field in ('hostname', 'device_rp_uuid', 'instance_uuid')
            ]
        self._request(
            ctxt,
            'PATCH',
            '/accelerator_requests',
            ok=(200, 202, 204),
            json=patch,
        )

    def get_arqs_for_instance(self, ctxt, instance_uuid, only_resolved=False):
        """The instance's ARQs; with ``only_resolved`` None while some are
        still binding (the service answers 423)."""
        params = {'instance': instance_uuid}
        if only_resolved:
            params['bind_state'] = 'resolved'
        response = self._request(
            ctxt, 'GET', '/accelerator_requests', ok=(200, 423), params=params
        )
        if response.status_code == 423:
            return None
        return self._arqs(response)

    def get_arqs(self, ctxt, arq_uuids):
        """The ARQs with these uuids (missing ones left out), in order."""
        arqs = []
        for arq_uuid in arq_uuids:
            response = self._request(
                ctxt, 'GET', '/accelerator_requests/' + arq_uuid, ok=(200, 404)
            )
            if response.status_code == 404:
                continue
            try:
                arqs.append(response.json())
            except ValueError as exc:
                raise AcceleratorError(
                    'accelerator API answered an '
                    'unexpected body for ARQ %s' % arq_uuid
                ) from exc
        return arqs

    def list_arqs(self, ctxt):
        """Every ARQ the service holds (``GET /accelerator_requests``)."""
        return self._arqs(self._request(ctxt, 'GET', '/accelerator_requests'))

    def delete_arqs_for_instance(self, ctxt, instance_uuid):
        """Delete (and unbind) every ARQ of the instance; idempotent."""
        self._delete(ctxt, {'instance': instance_uuid})

    def delete_arqs(self, ctxt, arq_uuids):
        """Delete these ARQs (bound or not: the service role may);
        idempotent. The service deletes all or none (404 when one is
        missing), so after a 404 each is deleted on its own."""
        if not arq_uuids:
            return
        response = self._delete(ctxt, {'arqs': ','.join(arq_uuids)})
        if response.status_code != 404 or len(arq_uuids) == 1:
            return
        for arq_uuid in arq_uuids:
            self._delete(ctxt, {'arqs': arq_uuid})

    def _delete(self, ctxt, params):
        """``DELETE /accelerator_requests?<params>``, a 404 taken as done."""
        return self._request(
            ctxt,
            'DELETE',
            '/accelerator_requests',
            ok=(200, 202, 204, 404),
            params=params,
        )

    def _headers(self, ctxt):
        headers = {'Accept': 'application/json'}
        if self.auth_strategy == 'noauth2':
            headers['X-Auth-Token'] = 'nimbus:service'
            headers['X-Roles'] = 'admin,service'
        request_id = ctxt is not None and (
            getattr(ctxt, 'global_request_id', None)
            or getattr(ctxt, 'request_id', None)
        )
        if request_id:
            headers['X-Openstack-Request-Id'] = request_id
        return headers

    def get_device_profile(self, ctxt, name):
        """The device profile called ``name`` (a dict with ``groups``)."""
        try:
            response = self.session.get(
                self.endpoint + '/device_profiles',
                params={'name': name},
                headers=self._headers(ctxt),
                timeout=self.timeout,
            )
        except requests.RequestException as exc:
            raise AcceleratorError(
                'accelerator API unreachable: %s' % exc
            ) from exc
        if response.status_code == 404:
            raise DeviceProfileError('device profile %s not found' % name)
        if response.status_code >= 400:
            raise AcceleratorError(
                'accelerator API answered %d: %s'
                % (response.status_code, response.text[:300])
            )
        try:
            profiles = response.json()['device_profiles']
        except (ValueError, KeyError, TypeError) as exc:
            raise AcceleratorError(
                'accelerator API answered an unexpected '
                'body for device profile %s' % name
            ) from exc
        for profile in profiles or []:
            if isinstance(profile, dict) and profile.get('name') == name:
                return profile
        raise DeviceProfileError('device profile %s not found' % name)

    def get_device_profile_groups(self, ctxt, name):
        """The profile's groups, in the profile's order (seed 004)."""
        groups = self.get_device_profile(ctxt, name).get('groups')
        if not isinstance(groups, list) or not groups:
            raise DeviceProfileError('device profile %s has no groups' % name)
        return groups

    def get_device_request_groups(self, ctxt, name):
        """The profile's groups as RequestSpec ``requested_resources``."""
        return request_groups(self.get_device_profile_groups(ctxt, name))


def from_conf(conf, session=None):
    """A client for ``[accelerator_client] endpoint``, or None when unset."""
    group = getattr(conf, GROUP)
    if not group.endpoint:
        return None
    return AcceleratorClient(
        group.endpoint,
        session=auth.sender(conf, GROUP, session),
        timeout=group.timeout,
        auth_strategy=group.auth_strategy,
        retries=group.retries,
    )
