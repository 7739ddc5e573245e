"""The request path's cheaper pieces answer as the ones they replace:
microversion negotiation read from the environ, the request id, the
masking pre-check."""

import re
import uuid

import microversion_parse
import pytest
from oslo_utils import strutils

from nimbus.common import secrets
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import microversion
from nimbus.common.wsgi import middleware

HEADER_SETS = [
    {},
    {'OpenStack-API-Version': 'placement 1.39'},
    {'OpenStack-API-Version': 'placement latest'},
    {'OpenStack-API-Version': 'compute 2.1, placement 1.10'},
    {'OpenStack-API-Version': 'placement 1.2, compute 2.1'},
    {'OpenStack-API-Version': 'compute 2.1'},
    {'OpenStack-API-Version': 'placement  1.20 '},
    {'X-OpenStack-Nova-API-Version': '1.5'},
    {'X-OpenStack-Nova-API-Version': '1.5, 1.7'},
    {
        'OpenStack-API-Version': 'placement 1.8',
        'X-OpenStack-Nova-API-Version': '1.5',
    },
    {'OpenStack-API-Version': 'placement 1.99'},
    {'OpenStack-API-Version': 'placement 1.05'},
    {'OpenStack-API-Version': 'placement one'},
]


def _environ(headers):
    return {
        'HTTP_' + k.upper().replace('-', '_'): v for k, v in headers.items()
    }


def _falcon_headers(headers):
    # What falcon's req.headers gives negotiate (upper case, dashes).
    return {k.upper(): v for k, v in headers.items()}


def _answer(fn):
    try:
        return ('ok', str(fn()))
    except errors.HTTPError as exc:
        return ('error', exc.status, str(exc))


@pytest.mark.parametrize('headers', HEADER_SETS)
def test_negotiate_environ_answers_as_negotiate_on_all_headers(headers):
    make = lambda: microversion.Negotiator(  # noqa: E731
        'placement', '1.0', '1.39', ('X-OpenStack-Nova-API-Version',)
    )
    cached = make()
    want = _answer(lambda: make().negotiate(_falcon_headers(headers)))
    for _ in range(3):  # the first answer, then the remembered one
        assert _answer(
            lambda: cached.negotiate_environ(_environ(headers))
        ) == (want)


def test_negotiate_environ_remembers_agreed_versions_only():
    neg = microversion.Negotiator('placement', '1.0', '1.39')
    ok = {'HTTP_OPENSTACK_API_VERSION': 'placement 1.30'}
    bad = {'HTTP_OPENSTACK_API_VERSION': 'placement 9.0'}
    assert neg.negotiate_environ(ok) is neg.negotiate_environ(ok)
    for _ in range(2):
        with pytest.raises(errors.HTTPError) as exc:
            neg.negotiate_environ(bad)
        assert exc.value.version_limits == (neg.min, neg.max)
    assert len(neg._agreed) == 1
    assert microversion_parse.STANDARD_HEADER == 'openstack-api-version'


def test_negotiate_environ_bounds_what_it_remembers():
    neg = microversion.Negotiator('placement', '1.0', '1.39')
    for i in range(microversion._AGREED_MAX + 50):
        env = {
            'HTTP_OPENSTACK_API_VERSION': 'placement 1.%d, x %d' % (i % 40, i)
        }
        assert str(neg.negotiate_environ(env)) == '1.%d' % (i % 40)
    assert len(neg._agreed) == microversion._AGREED_MAX


def test_request_ids_are_version_4_uuids():
    seen = set()
    for _ in range(2000):
        rid = middleware.new_request_id()
        assert re.fullmatch(
            r'req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-'
            r'[0-9a-f]{12}',
            rid,
        )
        u = uuid.UUID(rid[4:])
        assert u.version == 4 and u.variant == uuid.RFC_4122
        assert str(u) == rid[4:]
        seen.add(rid)
    assert len(seen) == 2000


def test_every_sanitize_key_contains_an_anchor():
    for key in strutils._SANITIZE_KEYS:
        assert any(a in key for a in secrets._ANCHORS), key


@pytest.mark.parametrize(
    'text',
    [
        'GET /x status: 200',
        'admin_password=abc',
        'AdminPass: "s3cret"',
        '{"auth_token": "tok"}',
        'X-Auth-Token: abc',
        'RabbitCookie=1 cephmonkey=2',
        'the passphrase is here',
        'keystonecredential0 = x',
        'mysql+pymysql://root:pw@db/nimbus password=xx',
        'nothing to see',
    ],
)
def test_mask_is_mask_password_where_a_key_is(text):
    want = strutils.mask_password(secrets.mask_url(text), secret='***')
    assert secrets.mask(text) == want
