"""ComputeEvents: what it posts to nimbus-api and how it reads answers."""

import pytest
import requests

from nimbus.accelerator import compute_events

ARQ = '0f0e0d0c-0b0a-4000-8000-000000000001'
SERVER = '6a9d8e39-3d1f-4d5c-9a55-1f4b3c2d1e0f'


class Response:
    def __init__(self, status, body=None):
        self.status_code = status
        self._body = body
        self.text = '' if body is None else repr(body)

    def json(self):
        if self._body is None:
            raise ValueError('no body')
        return self._body


class Session:
    """A requests.Session stand-in answering one fixed response."""

    def __init__(self, answer):
        self.answer = answer
        self.requests = []

    def request(self, method, url, **kwargs):
        self.requests.append((method, url, kwargs))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _send(answer):
    session = Session(answer)
    client = compute_events.ComputeEvents(
        'http://api:8774/v2.1/', session=session
    )
    return client.send(ARQ, SERVER, 'completed'), session


def test_posts_the_bound_event_at_microversion_2_82():
    (delivered, _), session = _send(Response(200, {'events': []}))
    assert delivered
    [(method, url, kwargs)] = session.requests
    assert method == 'POST'
    assert url == 'http://api:8774/v2.1/os-server-external-events'
    assert kwargs['headers']['OpenStack-API-Version'] == 'compute 2.82'
    assert kwargs['headers']['X-Roles'] == 'admin,service'
    assert kwargs['json'] == {
        'events': [
            {
                'name': 'accelerator-request-bound',
                'server_uuid': SERVER,
                'tag': ARQ,
                'status': 'completed',
            }
        ]
    }


@pytest.mark.parametrize(
    'answer,delivered',
    [
        (Response(200, {'events': []}), True),
        (Response(207, {'events': [{'tag': ARQ, 'code': 200}]}), True),
        (Response(207, {'events': [{'tag': ARQ, 'code': 422}]}), False),
        (Response(207, {'events': [{'tag': 'other', 'code': 200}]}), False),
        (Response(207), False),
        (Response(422, {'badRequest': {}}), False),
        (Response(404, {'itemNotFound': {}}), False),
        (Response(500), False),
        (Response(503), False),
        (requests.ConnectionError('refused'), False),
    ],
)
def test_answers(answer, delivered):
    (result, reason), _ = _send(answer)
    assert result is delivered
    assert reason


def test_unset_endpoint_means_no_client():
    from nimbus.common import config

    conf = config.build_conf([])
    assert compute_events.from_conf(conf) is None
    conf.set_override(
        'endpoint', 'http://api:8774/v2.1', group='compute_client'
    )
    assert compute_events.from_conf(conf).endpoint == 'http://api:8774/v2.1'
