"""PlacementClient's retry policies are built once per attempt count and
reused by every call, and still retry as before: a connection error or a
5xx answer is sent again (waits 0.1 s doubling), up to ``retries`` more
times; a provider-generation race PUTs again (waits 0.02 s doubling)."""

import json

import pytest
import requests
import tenacity

from nimbus.common import exception
from nimbus.common.clients import placement as pc

RP = '22222222-2222-2222-2222-222222222222'
AREQ = {'allocations': {RP: {'resources': {'VCPU': 1}}}}


def _response(status, body=None):
    r = requests.Response()
    r.status_code = status
    r._content = json.dumps(body).encode() if body is not None else b''
    r.encoding = 'utf-8'
    return r


class Scripted:
    """A requests.Session stand-in answering from ``answers`` in order (an
    exception instance is raised)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.sent = []

    def request(
        self, method, url, json=None, params=None, headers=None, timeout=None
    ):
        self.sent.append((method, url))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def built(monkeypatch):
    """The policies built while the test runs, and the waits they slept."""
    record = {'built': [], 'slept': []}

    class Counted(tenacity.Retrying):
        def __init__(self, **kwargs):
            record['built'].append(kwargs['stop'].max_attempt_number)
            kwargs['sleep'] = record['slept'].append
            super().__init__(**kwargs)

    monkeypatch.setattr(pc.tenacity, 'Retrying', Counted)
    pc._send_policy.cache_clear()
    pc._race_policy.cache_clear()
    yield record
    pc._send_policy.cache_clear()
    pc._race_policy.cache_clear()


def test_request_policy_is_built_once_and_still_retries(built):
    unreachable = requests.ConnectionError('refused')
    session = Scripted(
        [unreachable, _response(503), _response(200, {'ok': 1})] * 3
    )
    client = pc.PlacementClient('http://p', session=session, retries=3)
    for _ in range(3):
        assert client.request(None, 'GET', '/x').json() == {'ok': 1}
    assert len(session.sent) == 9
    assert built['built'] == [4]  # one policy: retries + 1 attempts
    assert built['slept'] == [0.1, 0.2] * 3
    # Another client with the same retries shares it.
    other = pc.PlacementClient(
        'http://p', session=Scripted([_response(204)]), retries=3
    )
    other.request(None, 'GET', '/y')
    assert built['built'] == [4]


def test_request_gives_up_after_retries_plus_one_attempts(built):
    session = Scripted([_response(500)] * 3)
    client = pc.PlacementClient('http://p', session=session, retries=2)
    with pytest.raises(exception.PlacementError):
        client.request(None, 'GET', '/x')
    assert len(session.sent) == 3
    assert built['slept'] == [0.1, 0.2]
    # The next call starts over with the same policy.
    session.answers = [_response(500), _response(200, {})]
    assert client.request(None, 'GET', '/x').status_code == 200
    assert built['built'] == [3]


def test_race_policy_is_built_once_and_still_puts_again(built):
    race = _response(
        409,
        {
            'errors': [
                {
                    'status': 409,
                    'code': pc.CONCURRENT_UPDATE,
                    'detail': 'generation moved',
                }
            ]
        },
    )
    mine = {'allocations': {}}
    answers = []
    for _ in range(2):
        answers += [race, _response(200, mine), _response(204)]
    session = Scripted(answers)
    client = pc.PlacementClient('http://p', session=session, retries=2)
    for n in range(2):
        out = client.claim(None, f'c-{n}', AREQ, 'p', 'u')
        assert out.status == pc.CLAIMED and out.attempts == 2
    puts = [s for s in session.sent if s[0] == 'PUT']
    assert len(puts) == 4
    # The send policy (3 attempts) and the race policy (3 PUTs), once each.
    assert sorted(built['built']) == [3, 3]
    assert built['slept'] == [0.02, 0.02]
