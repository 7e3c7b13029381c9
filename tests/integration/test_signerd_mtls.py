"""mTLS: the role comes from the client certificate's SPIFFE URI SAN; only ``client`` may sign."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import grpc
import pytest

from patchgate.digest import FileEntry, Manifest
from patchgate.errors import RefusedError, TransportError
from patchgate.keys import Keyring
from patchgate.pki import issue, make_ca
from patchgate.signer_client import SignerClient
from patchgate.tls import ClientTLS
from patchgate.v1 import signer_pb2, signer_pb2_grpc
from tests.conftest import KeyPair
from tests.integration.fixtures_signer import SignerDaemon, TestPKI, start_signer

pytestmark = pytest.mark.integration

MANIFEST = Manifest(
    pin_id="fixpin-tls",
    files={"fixtures/a.json": FileEntry("b" * 64, 3)},
    seed=1,
    clock_bound_ms=1000,
    allowed_commands=(("python", "-m", "pytest"),),
)


@pytest.fixture
def tls_signer(operator_key: KeyPair, pki: TestPKI, tmp_path: object) -> Iterator[SignerDaemon]:
    """A signer requiring mTLS, on a unix socket."""
    daemon = start_signer([operator_key.key_path], extra_args=pki.server_args())
    try:
        yield daemon
    finally:
        assert daemon.stop() == 0
        shutil.rmtree(daemon.socket_dir, ignore_errors=True)


def _audit(daemon: SignerDaemon) -> list[dict[str, object]]:
    return [json.loads(x) for x in daemon.audit_log.read_text().splitlines()]


def test_client_role_may_sign(tls_signer: SignerDaemon, pki: TestPKI) -> None:
    """A certificate with spiffe://patchgate/role/client gets a verified envelope."""
    ring = Keyring.load(tls_signer.keyring_path)
    with SignerClient(tls_signer.address, tls=pki.client_tls(pki.client)) as c:
        _, st = c.sign_and_verify(MANIFEST, ring)
    assert st.digest == MANIFEST.digest()
    line = _audit(tls_signer)[-1]
    assert (line["caller"], line["role"], line["decision"]) == (
        "spiffe://patchgate/role/client",
        "client",
        "granted",
    )


def test_executor_role_is_denied_and_audited(tls_signer: SignerDaemon, pki: TestPKI) -> None:
    """An executor certificate gets PERMISSION_DENIED for signing and for the keyring."""
    with SignerClient(tls_signer.address, tls=pki.client_tls(pki.executor)) as c:
        with pytest.raises(RefusedError) as info:
            c.sign_fixture_digest(MANIFEST)
        assert info.value.code == "PERMISSION_DENIED"
        with pytest.raises(RefusedError):
            c.get_keyring()
    lines = _audit(tls_signer)
    assert [(x["role"], x["decision"], x["code"]) for x in lines] == [
        ("executor", "denied", "PERMISSION_DENIED"),
        ("executor", "denied", "PERMISSION_DENIED"),
    ]


def test_caller_without_client_certificate_is_refused(
    tls_signer: SignerDaemon, pki: TestPKI
) -> None:
    """TLS without a client certificate fails the handshake: nothing reaches the signer."""
    creds = grpc.ssl_channel_credentials(root_certificates=pki.ca.cert.read_bytes())
    target = tls_signer.address
    with (
        grpc.secure_channel(
            target, creds, options=[("grpc.ssl_target_name_override", "localhost")]
        ) as ch,
        pytest.raises(grpc.RpcError) as info,
    ):
        signer_pb2_grpc.SignerStub(ch).GetKeyring(signer_pb2.GetKeyringRequest(), timeout=5)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert _audit(tls_signer) == []


def test_certificate_from_another_ca_is_refused(
    tls_signer: SignerDaemon, pki: TestPKI, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A client role certificate issued by a different CA is not accepted."""
    rogue = tmp_path_factory.mktemp("rogue")
    make_ca(rogue)
    cert = issue(rogue, "client")
    tls = ClientTLS(ca_cert=pki.ca.cert, cert=cert.cert, key=cert.key)
    with SignerClient(tls_signer.address, tls=tls) as c, pytest.raises(TransportError):
        c.get_keyring()
    assert _audit(tls_signer) == []


def test_plaintext_caller_is_refused(tls_signer: SignerDaemon) -> None:
    """A plaintext connection to the mTLS signer does not get an answer."""
    with SignerClient(tls_signer.address, timeout=3) as c, pytest.raises(TransportError):
        c.get_keyring()


def test_mtls_over_tcp_with_port_zero(operator_key: KeyPair, pki: TestPKI) -> None:
    """With TLS the signer may listen on TCP; port 0 is reported as the real port."""
    daemon = start_signer(
        [operator_key.key_path], listen="127.0.0.1:0", extra_args=pki.server_args()
    )
    try:
        assert not daemon.address.endswith(":0")
        with SignerClient(daemon.address, tls=pki.client_tls(pki.client)) as c:
            _, st = c.sign_and_verify(MANIFEST, Keyring.load(daemon.keyring_path))
        assert st.digest == MANIFEST.digest()
    finally:
        assert daemon.stop() == 0
        shutil.rmtree(daemon.socket_dir, ignore_errors=True)
