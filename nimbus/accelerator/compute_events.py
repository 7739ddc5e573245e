"""Sends ``accelerator-request-bound`` events to nimbus-api.

``POST {[compute_client] endpoint}/os-server-external-events`` with
``OpenStack-API-Version: compute 2.82``. :meth:`ComputeEvents.send`
answers whether the event is done with (200, or 207 whose entry for it has
code 200) or must be tried again (422: the instance is not on a host yet;
404, 5xx, unreachable, and anything else: nimbus-api may know better
later). It never raises for an HTTP or connection failure.
"""

import requests
from oslo_log import log as logging

from nimbus.accelerator import conf as accel_conf
from nimbus.common.clients import auth

LOG = logging.getLogger(__name__)

EVENT_NAME = 'accelerator-request-bound'
MICROVERSION = 'compute 2.82'


class ComputeEvents:
    """``ComputeEvents(endpoint, session=None, timeout=30,
    auth_strategy='noauth2')``; ``session`` is anything with
    ``requests.Session.request``'s signature."""

    def __init__(
        self, endpoint, session=None, timeout=30, auth_strategy='noauth2'
    ):
        self.endpoint = endpoint.rstrip('/')
        self.session = session or requests.Session()
        self.timeout = timeout
        self.auth_strategy = auth_strategy

    def _headers(self):
        headers = {
            'Accept': 'application/json',
            'Content-Type': 'application/json',
            'OpenStack-API-Version': MICROVERSION,
        }
        if self.auth_strategy == 'noauth2':
            headers['X-Auth-Token'] = 'nimbus:service'
            headers['X-Roles'] = 'admin,service'
        return headers

    def send(self, arq_uuid, server_uuid, status):
        """Post one event; ``(True, detail)`` when delivered, ``(False,
        reason)`` when it must be retried."""
        event = {
            'name': EVENT_NAME,
            'server_uuid': server_uuid,
            'tag': arq_uuid,
            'status': status,
        }
        try:
            response = self.session.request(
                'POST',
                self.endpoint + '/os-server-external-events',
                json={'events': [event]},
                headers=self._headers(),
                timeout=self.timeout,
            )
        except requests.RequestException as exc:
            return False, 'nimbus-api unreachable: %s' % exc
        code = response.status_code
        if code == 200:
            return True, 'delivered'
        if code == 207:
            try:
                entries = response.json()['events']
                codes = [
                    e.get('code') for e in entries if e.get('tag') == arq_uuid
                ]
            except (ValueError, KeyError, TypeError, AttributeError):
                return False, 'nimbus-api answered 207 with an unreadable body'
            if codes and all(c == 200 for c in codes):
                return True, 'delivered'
            return False, 'nimbus-api answered 207, event code %s' % (
                codes[0] if codes else 'missing'
            )
        return False, 'nimbus-api answered %d: %s' % (
            code,
            response.text[:200],
        )


def from_conf(conf, session=None):
    """The events client of ``[compute_client]``, or None when its
    endpoint is unset."""
    group = getattr(conf, accel_conf.COMPUTE_CLIENT_GROUP)
    if not group.endpoint:
        return None
    return ComputeEvents(
        group.endpoint,
        session=auth.sender(conf, accel_conf.COMPUTE_CLIENT_GROUP, session),
        timeout=group.timeout,
        auth_strategy=group.auth_strategy,
    )
