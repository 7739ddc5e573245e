"""os-keypairs: generated and imported key pairs per user, their
microversions, quota and their use at server create."""

import base64
import hashlib

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization

from nimbus.api.objects import keypair_crypto

# Tempest's imported key (test_keypair_create_with_pub_key); ssh-keygen -l
# -E md5 gives its fingerprint.
PUB_KEY = (
    'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCsNe3/1ILNCqFyfYWDeTKLD6jEXC2OQ'
    'HLmietMWW+/vdaZq7KZEwO0jhglaFjU1mpqq4Gz5RX156sCTNM9vRbwKAxfsdF9laBYVs'
    'ex3m3Wmui3uYrKyumsoJn2g9GNnG1PI1mrVjZ61i0GY3khna+wzlTpCCmy5HNlrmbj3X'
    'LqBUpipTOXmsnr4sChzC53KCd8LXuwc1i/CZPvF+3XipvAgFSE53pCtLOeB1kYMOBaiUP'
    'LQTWXR3JpckqFIQwhIH0zoHlJvZE8hh90XcPojYN56tI0OlrGqojbediJYD0rUsJu4weZ'
    'pbn8vilb3JuDY+jwssnSA8wzBx3A/8y9Pp1B nova@ubuntu'
)
PUB_KEY_MD5 = '61:5f:fe:c7:e0:fd:d7:4a:2b:52:6e:a6:f5:bf:da:27'


def _create(api, version='2.1', user='demo', project=None, **keypair):
    return api.req(
        'POST',
        '/v2.1/os-keypairs',
        {'keypair': keypair},
        user=user,
        project=project,
        version=version,
    )


def _md5(public_key):
    blob = base64.b64decode(public_key.split()[1])
    digest = hashlib.md5(blob, usedforsecurity=False).digest()
    return ':'.join('%02x' % b for b in digest)


def test_generated_ssh_key_pair_is_a_real_rsa_key(api):
    r = _create(api, name='gen')
    assert r.status_code == 200, r.text
    keypair = r.json['keypair']
    assert keypair['user_id'] == 'demo'
    assert 'type' not in keypair
    private = serialization.load_pem_private_key(
        keypair['private_key'].encode(), password=None
    )
    assert private.key_size == 2048
    derived = (
        private.public_key()
        .public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        .decode()
    )
    # The public key returned is the private key's own public half.
    assert keypair['public_key'].split()[:2] == derived.split()[:2]
    assert keypair['fingerprint'] == _md5(keypair['public_key'])
    # Two generated key pairs differ.
    other = _create(api, name='gen2').json['keypair']
    assert other['public_key'] != keypair['public_key']


def test_imported_ssh_key_keeps_its_key_and_gets_ssh_keygens_fingerprint(api):
    r = _create(api, name='imp', public_key=PUB_KEY)
    assert r.status_code == 200, r.text
    keypair = r.json['keypair']
    assert 'private_key' not in keypair
    assert keypair['public_key'] == PUB_KEY
    assert keypair['fingerprint'] == PUB_KEY_MD5


def test_x509_key_pair_generated_and_imported_at_2_2(api):
    r = _create(api, '2.2', name='cert', type='x509')
    assert r.status_code == 201, r.text
    keypair = r.json['keypair']
    assert keypair['type'] == 'x509'
    cert = x509.load_pem_x509_certificate(keypair['public_key'].encode())
    assert keypair['fingerprint'] == ':'.join(
        '%02x' % b for b in cert.fingerprint(hashes.SHA1())
    )
    private = serialization.load_pem_private_key(
        keypair['private_key'].encode(), password=None
    )
    assert (
        private.public_key().public_numbers()
        == cert.public_key().public_numbers()
    )
    _, pem, fingerprint = keypair_crypto.generate_x509('u', 'p')
    r = _create(api, '2.2', name='cert2', type='x509', public_key=pem)
    assert r.status_code == 201, r.text
    assert r.json['keypair']['fingerprint'] == fingerprint
    assert 'private_key' not in r.json['keypair']
    r = _create(api, '2.2', name='cert3', type='x509', public_key=PUB_KEY)
    assert r.status_code == 400


def test_type_is_refused_below_2_2_and_checked_from_it(api):
    assert _create(api, name='k', type='ssh').status_code == 400
    r = _create(api, '2.2', name='k', type='gpg')
    assert r.status_code == 400
    assert 'type' in r.json['badRequest']['message']
    r = _create(api, '2.2', name='k')
    assert r.status_code == 201
    assert r.json['keypair']['type'] == 'ssh'


@pytest.mark.slow
@pytest.mark.parametrize(
    'keypair',
    [
        {'name': 'k', 'public_key': 'ssh-rsa JUNK nova@ubuntu'},
        {'name': 'k', 'public_key': ' '},
        {'name': 'k', 'public_key': 'ssh-rsa ' + 'A' * 2048 + ' x@y'},
        {'name': 'k', 'public_key': 'ssh-rsa ' + 'A' * 70000},
        {'name': ''},
        {'name': 'k' * 256},
        {'name': r'key_/.\@:'},
        {'name': 'k@host'},
        {},
        {'name': 'k', 'extra': 1},
    ],
)
def test_bad_key_pairs_are_400(api, keypair):
    r = _create(api, **keypair)
    assert r.status_code == 400, r.text
    assert r.json['badRequest']['message']
    assert api.req('GET', '/v2.1/os-keypairs').json['keypairs'] == []


def test_2_92_needs_a_public_key_and_allows_at_and_dot(api):
    r = _create(api, '2.92', name='k')
    assert r.status_code == 400
    assert 'public_key' in r.json['badRequest']['message']
    r = _create(api, '2.92', name='me@host.example', public_key=PUB_KEY)
    assert r.status_code == 201, r.text
    r = api.req('GET', '/v2.1/os-keypairs/me@host.example', version='2.92')
    assert r.json['keypair']['name'] == 'me@host.example'


def test_duplicate_name_is_409_per_user(api):
    assert _create(api, name='k').status_code == 200
    r = _create(api, name='k', public_key=PUB_KEY)
    assert r.status_code == 409
    assert 'k' in r.json['conflictingRequest']['message']
    # Another user may use the same name.
    assert _create(api, user='other', name='k').status_code == 200


def test_list_show_delete_are_the_users_own(api):
    _create(api, name='mine', public_key=PUB_KEY)
    _create(api, user='other', name='theirs')
    r = api.req('GET', '/v2.1/os-keypairs')
    assert r.json == {
        'keypairs': [
            {
                'keypair': {
                    'name': 'mine',
                    'public_key': PUB_KEY,
                    'fingerprint': PUB_KEY_MD5,
                }
            }
        ]
    }
    r = api.req('GET', '/v2.1/os-keypairs/mine')
    shown = r.json['keypair']
    assert shown['user_id'] == 'demo' and shown['deleted'] is False
    assert isinstance(shown['id'], int) and shown['deleted_at'] is None
    r = api.req('GET', '/v2.1/os-keypairs/theirs')
    assert r.status_code == 404
    assert 'theirs' in r.json['itemNotFound']['message']
    assert api.req('DELETE', '/v2.1/os-keypairs/theirs').status_code == 404
    assert api.req('DELETE', '/v2.1/os-keypairs/mine').status_code == 202
    assert api.req('GET', '/v2.1/os-keypairs/mine').status_code == 404
    r = api.req('DELETE', '/v2.1/os-keypairs/mine', version='2.2')
    assert r.status_code == 404
    _create(api, '2.2', name='again')
    r = api.req('DELETE', '/v2.1/os-keypairs/again', version='2.2')
    assert r.status_code == 204


def test_admin_acts_for_another_user_from_2_10(api):
    r = _create(api, '2.10', user='admin', name='for-demo', user_id='demo')
    assert r.status_code == 201, r.text
    assert r.json['keypair']['user_id'] == 'demo'
    _create(api, '2.10', user='admin', name='admins-own')
    names = [
        k['keypair']['name']
        for k in api.req('GET', '/v2.1/os-keypairs').json['keypairs']
    ]
    assert names == ['for-demo']
    r = api.admin('GET', '/v2.1/os-keypairs?user_id=demo', version='2.10')
    assert [k['keypair']['name'] for k in r.json['keypairs']] == ['for-demo']
    r = api.admin(
        'GET', '/v2.1/os-keypairs/for-demo?user_id=demo', version='2.10'
    )
    assert r.json['keypair']['user_id'] == 'demo'
    # Below 2.10 user_id is ignored: the admin sees its own.
    r = api.admin('GET', '/v2.1/os-keypairs?user_id=demo', version='2.9')
    assert [k['keypair']['name'] for k in r.json['keypairs']] == ['admins-own']
    # A member may not act for someone else.
    r = _create(api, '2.10', name='x', user_id='admin')
    assert r.status_code == 403
    r = api.req('GET', '/v2.1/os-keypairs?user_id=admin', version='2.10')
    assert r.status_code == 403
    r = api.admin(
        'DELETE', '/v2.1/os-keypairs/for-demo?user_id=demo', version='2.10'
    )
    assert r.status_code == 204
    assert api.req('GET', '/v2.1/os-keypairs').json['keypairs'] == []


def test_list_pages_from_2_35(api):
    for name in ('a', 'b', 'c'):
        _create(api, '2.35', name=name, public_key=PUB_KEY)
    r = api.req('GET', '/v2.1/os-keypairs?limit=2', version='2.35')
    assert [k['keypair']['name'] for k in r.json['keypairs']] == ['a', 'b']
    assert 'marker=b' in r.json['keypairs_links'][0]['href']
    r = api.req('GET', '/v2.1/os-keypairs?marker=b', version='2.35')
    assert [k['keypair']['name'] for k in r.json['keypairs']] == ['c']
    assert 'keypairs_links' not in r.json
    r = api.req('GET', '/v2.1/os-keypairs?marker=zz', version='2.35')
    assert r.status_code == 400
    r = api.req('GET', '/v2.1/os-keypairs?limit=x', version='2.35')
    assert r.status_code == 400
    # Below 2.35 paging parameters are ignored.
    r = api.req('GET', '/v2.1/os-keypairs?limit=1', version='2.34')
    assert len(r.json['keypairs']) == 3


def test_key_pairs_quota_is_per_user(api):
    api.admin(
        'PUT', '/v2.1/os-quota-sets/demo', {'quota_set': {'key_pairs': 2}}
    )
    assert _create(api, name='k1').status_code == 200
    assert _create(api, name='k2', public_key=PUB_KEY).status_code == 200
    r = _create(api, name='k3')
    assert r.status_code == 403
    assert 'key pairs' in r.json['forbidden']['message']
    # Another user of the project has a quota of its own.
    assert (
        _create(api, user='demo2', project='demo', name='k1').status_code
        == 200
    )
    api.req('DELETE', '/v2.1/os-keypairs/k1')
    assert _create(api, name='k3').status_code == 200


def test_server_create_takes_the_users_key_and_shows_it(api):
    api.add_flavor('1')
    image = api.add_image()
    _create(api, name='mykey', public_key=PUB_KEY)
    r = _create(api, user='other', project='demo', name='otherkey')
    assert r.status_code == 200

    def boot(key_name):
        return api.req(
            'POST',
            '/v2.1/servers',
            {
                'server': {
                    'name': 'vm',
                    'flavorRef': '1',
                    'imageRef': image,
                    'key_name': key_name,
                }
            },
        )

    r = boot('mykey')
    assert r.status_code == 202, r.text
    uuid = r.json['server']['id']
    r = api.req('GET', '/v2.1/servers/%s' % uuid)
    assert r.json['server']['key_name'] == 'mykey'
    api.place(uuid)
    r = api.req('GET', '/v2.1/servers/%s' % uuid)
    assert r.json['server']['key_name'] == 'mykey'
    # Another user's key pair is not the caller's.
    calls = len(api.conductor.calls)
    r = boot('otherkey')
    assert r.status_code == 400
    assert 'otherkey' in r.json['badRequest']['message']
    assert len(api.conductor.calls) == calls
