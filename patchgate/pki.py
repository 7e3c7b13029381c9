"""A small test PKI with ``cryptography``: one CA and role certificates with SPIFFE URI SANs.

For tests, demos and a laptop set-up (``scripts/make_certs.py``); a production operator brings
their own CA. Files written: ``ca.crt``/``ca.key`` and ``<role>.crt``/``<role>.key`` (keys 0600).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from patchgate.errors import KeyFileError
from patchgate.tls import SPIFFE_PREFIX

__all__ = ["ROLE_NAMES", "CertPaths", "issue", "make_ca"]

ROLE_NAMES = ("signer", "executor", "client")
_VALID = datetime.timedelta(days=365)


@dataclass(frozen=True)
class CertPaths:
    """A certificate and its private key on disk."""

    cert: Path
    key: Path


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise KeyFileError(f"{path}: already exists; refusing to overwrite a key") from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "patchgate"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def make_ca(directory: Path, common_name: str = "patchgate test CA") -> CertPaths:
    """Create ``ca.crt`` and ``ca.key`` (P-256) in ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALID)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    paths = CertPaths(directory / "ca.crt", directory / "ca.key")
    _write_key(paths.key, key)
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return paths


def issue(
    directory: Path,
    role: str,
    dns_names: Sequence[str] = ("localhost",),
    *,
    name: str | None = None,
) -> CertPaths:
    """Issue ``<name or role>.crt/.key`` signed by ``directory/ca.*`` with SAN ``spiffe://patchgate/role/<role>``."""
    directory = Path(directory)
    ca_key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise KeyFileError(f"{directory / 'ca.key'}: not an EC key")
    ca_cert = x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = [x509.UniformResourceIdentifier(SPIFFE_PREFIX + role)]
    sans += [x509.DNSName(d) for d in dns_names]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(f"patchgate {role}"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALID)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    stem = name or role
    paths = CertPaths(directory / f"{stem}.crt", directory / f"{stem}.key")
    _write_key(paths.key, key)
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return paths
