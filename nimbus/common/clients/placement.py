"""A small client of the Placement REST API, used by every Nimbus service.

It speaks the OpenStack Placement wire format at microversion 1.39 over a
``requests.Session``: a real HTTP session in production, or
``nimbus.placement.direct.PlacementDirect`` in-process (no HTTP) for
offline tools and tests. Provider-generation races are retried here with
tenacity; a consumer-generation conflict or a capacity failure is reported
to the caller, who decides (the scheduler tries the next host after a
capacity refusal and fails the one instance after a consumer conflict).
"""

import functools
import threading

import requests
from requests import adapters
from oslo_log import log as logging
import tenacity

from nimbus.common import exception
from nimbus.common.clients import auth
from nimbus.common.clients import lean_http
from nimbus.common.clients import placement_candidates
from nimbus.common.clients import placement_moves
from nimbus.common.clients import placement_providers
from nimbus.common.clients.placement_providers import CONCURRENT_UPDATE
from nimbus.common.clients.placement_providers import error_code
from nimbus.common.clients.placement_providers import error_detail

LOG = logging.getLogger(__name__)

MICROVERSION = '1.39'
# The fields of one resource class's inventory that a client reports.
INVENTORY_FIELDS = (
    'total',
    'reserved',
    'min_unit',
    'max_unit',
    'step_size',
    'allocation_ratio',
)


def new_provider(provider, parent_uuid):
    """What a bulk tree writer (:func:`nimbus.placement.direct.
    tree_writer`) takes for one new ``provider`` (its uuid, name,
    inventory and traits) under ``parent_uuid`` (None for a root)."""
    return {
        'uuid': provider.uuid,
        'name': provider.name,
        'parent_provider_uuid': parent_uuid,
        'inventories': provider.inventory,
        'traits': sorted(provider.traits),
    }


def placement_session(size):
    """A requests session keeping up to ``size`` connections (the
    simulated hosts of a process share one)."""
    session = requests.Session()
    adapter = adapters.HTTPAdapter(pool_connections=4, pool_maxsize=size)
    session.mount('http://', adapter)
    session.mount('https://', adapter)
    return session


class _Retry(Exception):
    """Internal: a transient failure worth another try."""


class _ProviderRace(Exception):
    """Internal: PUT /allocations lost a provider-generation race."""

    def __init__(self, detail):
        super().__init__(detail)
        self.detail = detail


# Built once per attempt count, shared by every call and thread (a call's
# state is its own RetryCallState; the rest is thread-local).
@functools.lru_cache(maxsize=None)
def _send_policy(attempts):
    """:meth:`PlacementClient.request`'s: ``attempts`` in all on a
    connection error or 5xx answer, waits 0.1 s doubling up to 5 s."""
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(_Retry),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_exponential(multiplier=0.1, max=5),
        reraise=True,
    )


@functools.lru_cache(maxsize=None)
def _race_policy(attempts):
    """:meth:`PlacementClient.claim`'s: ``attempts`` PUTs in all while a
    provider generation races, waits 0.02 s doubling up to 1 s."""
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(_ProviderRace),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_exponential(multiplier=0.02, max=1),
        reraise=True,
    )


# Outcomes of :meth:`PlacementClient.claim`.
CLAIMED = 'claimed'
REFUSED = 'refused'  # no room (any 409 that is not a race)
CONSUMER_CONFLICT = 'consumer_conflict'  # the consumer changed under us


class ClaimOutcome:
    """What became of one claim: ``status`` is CLAIMED, REFUSED or
    CONSUMER_CONFLICT; ``detail`` is placement's words (or ours); ``attempts``
    counts the PUTs sent (provider-generation races are re-sent)."""

    __slots__ = ('status', 'detail', 'attempts')

    def __init__(self, status, detail=None, attempts=1):
        self.status = status
        self.detail = detail
        self.attempts = attempts

    @property
    def claimed(self):
        return self.status == CLAIMED

    def __bool__(self):
        return self.claimed

    def __repr__(self):
        return 'ClaimOutcome(%r, %r, attempts=%d)' % (
            self.status,
            self.detail,
            self.attempts,
        )


class PlacementClient(
    placement_providers.ProviderTreeCalls,
    placement_moves.MoveCalls,
    placement_candidates.CandidateCalls,
):
    """Placement REST client. ``session`` is any ``requests.Session``."""

    def __init__(
        self,
        endpoint,
        session=None,
        auth_strategy='noauth2',
        timeout=60,
        retries=5,
    ):
        """``session`` sends the requests: a ``requests.Session``, or with
        ``auth_strategy='keystone'`` a :class:`auth.KeystoneSender` (which
        adds the token)."""
        self.endpoint = endpoint.rstrip('/')
        self.session = session or requests.Session()
        self.auth_strategy = auth_strategy
        self.timeout = timeout
        self.retries = retries
        # Custom resource classes and traits known to exist (created or
        # seen).
        self._resource_classes = set()
        self._traits = set()
        self._names_lock = threading.Lock()

    @classmethod
    def from_conf(cls, conf, session=None):
        """The client of ``[placement_client]``; ``session`` (for noauth2
        only) replaces the HTTP session, e.g. with PlacementDirect. Without
        one, an ``http://`` endpoint is sent to by a
        :class:`~nimbus.common.clients.lean_http.LeanSession`."""
        group = conf.placement_client
        if session is None and group.endpoint:
            session = lean_http.session_for(group.endpoint)
        return cls(
            group.endpoint,
            session=auth.sender(conf, 'placement_client', session),
            auth_strategy=group.auth_strategy,
            timeout=group.timeout,
            retries=group.retries,
        )

    # -- transport ---------------------------------------------------------

    def _headers(self, ctxt, version):
        headers = {
            'OpenStack-API-Version': 'placement %s' % version,
            'Accept': 'application/json',
        }
        request_id = ctxt is not None and (
            getattr(ctxt, 'global_request_id', None)
            or getattr(ctxt, 'request_id', None)
        )
        if request_id:
            headers['X-Openstack-Request-Id'] = request_id
        if self.auth_strategy == 'noauth2':
            headers['X-Auth-Token'] = 'nimbus:service'
            headers['X-Roles'] = 'admin,service'
        return headers

    def request(
        self,
        ctxt,
        method,
        path,
        json=None,
        params=None,
        version=MICROVERSION,
        extra_headers=None,
    ):
        """One request, retried on connection errors and 5xx answers."""
        url = self.endpoint + path
        headers = self._headers(ctxt, version)
        if extra_headers:
            headers.update(extra_headers)
        try:
            return _send_policy(self.retries + 1)(
                self._send_once, method, path, url, json, params, headers
            )
        except _Retry as exc:
            raise exception.PlacementError(
                reason='%s %s: %s' % (method, path, exc)
            ) from exc

    def _send_once(self, method, path, url, json, params, headers):
        """One attempt of :meth:`request`: its answer, or ``_Retry`` on a
        connection error or a 5xx answer."""
        try:
            response = self.session.request(
                method,
                url,
                json=json,
                params=params,
                headers=headers,
                timeout=self.timeout,
            )
        except requests.ConnectionError as exc:
            LOG.warning('Placement unreachable (%s %s): %s', method, path, exc)
            raise _Retry(str(exc)) from exc
        if response.status_code >= 500:
            LOG.warning(
                'Placement %s %s answered %s',
                method,
                path,
                response.status_code,
            )
            raise _Retry(response.text[:200])
        return response

    def _check(self, response, what):
        if response.status_code >= 400:
            if response.status_code == 409:
                raise exception.PlacementConflict(
                    '%s: %s' % (what, error_detail(response)),
                    error_code=error_code(response),
                )
            raise exception.PlacementError(
                reason='%s: %s %s'
                % (what, response.status_code, error_detail(response))
            )
        return response

    # Deliberately like claim's signature: the boolean form for callers that
    # only need "claimed or not" (no race_retries: the default applies).
    def claim_resources(
        self,
        ctxt,
        consumer_uuid,
        allocation_request,
        project_id,
        user_id,
        consumer_generation=None,
        consumer_type='INSTANCE',
    ):
        """Claim ``allocation_request`` for a consumer.

        Returns True when claimed and False when placement refused (the
        resources went to someone else, or the consumer changed under us).
        :meth:`claim` says which.
        """
        return self.claim(
            ctxt,
            consumer_uuid,
            allocation_request,
            project_id,
            user_id,
            consumer_generation=consumer_generation,
            consumer_type=consumer_type,
        ).claimed

    def claim(
        self,
        ctxt,
        consumer_uuid,
        allocation_request,
        project_id,
        user_id,
        consumer_generation=None,
        consumer_type='INSTANCE',
        race_retries=None,
    ):
        """PUT /allocations/{consumer} and say what happened (ClaimOutcome).

        Placement answers 409 for three different reasons and only the code
        and the consumer's state tell them apart:

        * no ``placement.concurrent_update`` code: the capacity (or the
          inventory) is not there any more: REFUSED, try another host;
        * ``placement.concurrent_update`` and the consumer's generation is not
          the one we sent: someone else wrote this consumer's allocations
          (CONSUMER_CONFLICT; this consumer cannot be claimed as asked). When
          the consumer already holds exactly these allocations for this
          project and user, our own earlier PUT landed (its answer was lost
          and the transport re-sent it): CLAIMED;
        * ``placement.concurrent_update`` and the consumer is as we expect:
          a provider generation moved while placement wrote (placement
          retries that itself, but may still give up): the same body is
          PUT again, up to ``race_retries`` more times (default
          ``retries``) with exponential backoff, then REFUSED.
        """
        body = {
            'allocations': {
                rp: {'resources': alloc['resources']}
                for rp, alloc in allocation_request['allocations'].items()
            },
            'project_id': project_id,
            'user_id': user_id,
            'consumer_generation': consumer_generation,
            'consumer_type': consumer_type,
        }
        path = '/allocations/%s' % consumer_uuid
        retries = self.retries if race_retries is None else race_retries
        attempts = []

        def put():
            attempts.append(1)
            response = self.request(ctxt, 'PUT', path, json=body)
            if response.status_code == 204:
                return ClaimOutcome(CLAIMED, attempts=len(attempts))
            if response.status_code != 409:
                self._check(response, 'claim for %s' % consumer_uuid)
                return ClaimOutcome(
                    REFUSED, error_detail(response), len(attempts)
                )
            detail = error_detail(response)
            if error_code(response) != CONCURRENT_UPDATE:
                LOG.info('Claim for %s refused: %s', consumer_uuid, detail)
                return ClaimOutcome(REFUSED, detail, len(attempts))
            conflict = self._consumer_conflict(
                ctxt, consumer_uuid, body, consumer_generation
            )
            if conflict is None:
                LOG.info(
                    'Claim for %s lost a provider-generation race '
                    '(attempt %d): %s',
                    consumer_uuid,
                    len(attempts),
                    detail,
                )
                raise _ProviderRace(detail)
            if conflict is CLAIMED:
                return ClaimOutcome(CLAIMED, 'already held', len(attempts))
            LOG.warning(
                'Claim for %s: consumer generation conflict: %s',
                consumer_uuid,
                conflict,
            )
            return ClaimOutcome(CONSUMER_CONFLICT, conflict, len(attempts))

        try:
            return _race_policy(retries + 1)(put)
        except _ProviderRace as exc:
            return ClaimOutcome(
                REFUSED,
                'provider generation kept changing after %d '
                'attempts: %s' % (len(attempts), exc.detail),
                len(attempts),
            )

    def claim_many(self, ctxt, claims, project_id, user_id):
        """POST /allocations: claim ``claims`` (``[(consumer_uuid,
        allocation_request)]``, new consumers) in one placement
        transaction, all or none. True when all were claimed; False when
        placement refused (409: capacity gone, a provider or consumer
        generation moved); the caller then claims them one by one, which
        tells those cases apart. Other answers raise PlacementError (the
        outcome is then unknown)."""
        body = {
            uuid: {
                'allocations': {
                    rp: {'resources': alloc['resources']}
                    for rp, alloc in areq['allocations'].items()
                },
                'project_id': project_id,
                'user_id': user_id,
                'consumer_generation': None,
                'consumer_type': 'INSTANCE',
            }
            for uuid, areq in claims
        }
        response = self.request(ctxt, 'POST', '/allocations', json=body)
        if response.status_code == 204:
            return True
        if response.status_code == 409:
            LOG.info(
                'Placement refused the claims of %d consumers in one '
                'request: %s',
                len(body),
                error_detail(response),
            )
            return False
        self._check(response, 'claims of %d consumers' % len(body))
        raise exception.PlacementError(
            reason='claims of %d consumers: unexpected %s'
            % (len(body), response.status_code)
        )

    def _consumer_conflict(self, ctxt, consumer_uuid, body, sent_generation):
        """After a concurrent_update 409: None when the consumer is as the
        claim expected (a provider race), CLAIMED when it already holds
        exactly this claim, else a sentence describing the conflict."""
        current = self.get_allocations_for_consumer(ctxt, consumer_uuid)
        allocations = current.get('allocations') or {}
        have = current.get('consumer_generation')
        if not allocations:
            have = None  # placement drops consumers without allocations
        if have == sent_generation:
            return None
        mine = {rp: a['resources'] for rp, a in body['allocations'].items()}
        theirs = {rp: a.get('resources') for rp, a in allocations.items()}
        if (
            mine == theirs
            and current.get('project_id') == body['project_id']
            and current.get('user_id') == body['user_id']
        ):
            return CLAIMED
        return (
            'consumer generation conflict: the claim expected generation '
            '%s but consumer %s is at generation %s (it already holds '
            'allocations on %s)'
            % (
                'null' if sent_generation is None else sent_generation,
                consumer_uuid,
                have,
                ', '.join(sorted(allocations)) or 'nothing',
            )
        )

    def get_allocations_for_consumer(self, ctxt, consumer_uuid):
        response = self.request(ctxt, 'GET', '/allocations/%s' % consumer_uuid)
        return self._check(
            response, 'allocations of %s' % consumer_uuid
        ).json()

    def remove_allocations(self, ctxt, consumer_uuid):
        """Delete every allocation of a consumer (absent is fine)."""
        response = self.request(
            ctxt, 'DELETE', '/allocations/%s' % consumer_uuid
        )
        if response.status_code in (204, 404):
            return response.status_code == 204
        self._check(response, 'removing allocations of %s' % consumer_uuid)

    def remove_provider_from_consumer(self, ctxt, consumer_uuid, rp_uuids):
        """Drop a consumer's allocations against ``rp_uuids`` only."""

        def attempt(_n):
            current = self.get_allocations_for_consumer(ctxt, consumer_uuid)
            allocations = {
                rp: {'resources': a['resources']}
                for rp, a in current['allocations'].items()
                if rp not in set(rp_uuids)
            }
            if len(allocations) == len(current['allocations']):
                return
            body = {
                'allocations': allocations,
                'project_id': current.get('project_id'),
                'user_id': current.get('user_id'),
                'consumer_generation': current.get('consumer_generation'),
                # Required at 1.38 and later: the type the consumer has.
                'consumer_type': current.get('consumer_type') or 'INSTANCE',
            }
            self._written(
                self.request(
                    ctxt, 'PUT', '/allocations/%s' % consumer_uuid, json=body
                ),
                204,
                'updating allocations of %s' % consumer_uuid,
                conflicts=lambda response: True,
            )

        self._retrying_races(
            attempt,
            exception.PlacementConflict(
                'Could not update allocations of %s' % consumer_uuid
            ),
        )
