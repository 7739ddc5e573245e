"""Key pair material: generated with ``cryptography`` or imported, and the
fingerprints Nova shows.

An SSH key pair is an RSA key of 2048 bits; its public half is in OpenSSH's
one-line form and its fingerprint the MD5 of the key blob, as colon
separated hex pairs. An X.509 key pair is a self-signed certificate (PEM)
with its RSA key; its fingerprint is the SHA-1 of the certificate's DER
form, written the same way.
"""

import base64
import binascii
import datetime
import hashlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

SSH = 'ssh'
X509 = 'x509'
TYPES = (SSH, X509)
KEY_BITS = 2048
COMMENT = 'Generated-by-Nimbus'
CERT_DAYS = 365


class InvalidKey(Exception):
    """The public key (or certificate) cannot be read."""


def _colons(digest):
    return ':'.join('%02x' % b for b in digest)


def _private_pem(key):
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def ssh_fingerprint(public_key):
    """MD5 fingerprint of an OpenSSH public key line; InvalidKey when the
    line is not a public key ``cryptography`` can load."""
    text = (public_key or '').strip()
    try:
        serialization.load_ssh_public_key(text.encode())
        blob = base64.b64decode(text.split()[1], validate=True)
    except (ValueError, IndexError, binascii.Error, TypeError) as exc:
        raise InvalidKey(str(exc) or 'not an SSH public key') from exc
    except Exception as exc:  # cryptography's UnsupportedAlgorithm
        raise InvalidKey(str(exc) or 'unsupported key type') from exc
    return _colons(hashlib.md5(blob, usedforsecurity=False).digest())


def x509_fingerprint(certificate):
    """SHA-1 fingerprint of a PEM certificate; InvalidKey otherwise."""
    try:
        cert = x509.load_pem_x509_certificate((certificate or '').encode())
    except Exception as exc:  # ValueError, or cryptography's own errors
        raise InvalidKey(str(exc) or 'not a PEM certificate') from exc
    return _colons(cert.fingerprint(hashes.SHA1()))


def fingerprint(key_type, public_key):
    if key_type == X509:
        return x509_fingerprint(public_key)
    return ssh_fingerprint(public_key)


def generate_ssh():
    """``(private_key_pem, public_key_line, fingerprint)``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    public = (
        key.public_key()
        .public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        .decode()
    )
    public = '%s %s' % (public, COMMENT)
    return _private_pem(key), public, ssh_fingerprint(public)


def generate_x509(user_id, project_id, now=None):
    """``(private_key_pem, certificate_pem, fingerprint)``: a self-signed
    certificate naming the user and project, valid for a year."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, project_id or '-'),
            x509.NameAttribute(NameOID.COMMON_NAME, user_id or '-'),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    return _private_pem(key), pem, x509_fingerprint(pem)
