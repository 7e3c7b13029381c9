"""Root conftest: shared key fixtures; loads the per-area integration fixture plugins."""

import dataclasses
from pathlib import Path

import pytest

from patchgate.keys import Signer, generate_key_file, load_signer

pytest_plugins = [
    "tests.integration.fixtures_signer",
    "tests.integration.fixtures_executor",
    "tests.integration.fixtures_gate",
]


@dataclasses.dataclass(frozen=True)
class KeyPair:
    """A key written to disk (0600) and its public keyring file (``key_path`` + ``.pub``)."""

    key_path: Path
    keyring_path: Path
    signer: Signer


def make_key(directory: Path, role: str, name: str | None = None) -> KeyPair:
    """Create a key of ``role`` under ``directory`` with patchgate's own key tooling."""
    directory.mkdir(parents=True, exist_ok=True)
    key_path = directory / (name or f"{role}.key")
    generate_key_file(key_path, role)
    return KeyPair(key_path, Path(f"{key_path}.pub"), load_signer(key_path, role))


@pytest.fixture
def operator_key(tmp_path: Path) -> KeyPair:
    """A fresh operator key and keyring in a temp dir."""
    return make_key(tmp_path / "operator", "operator")


@pytest.fixture
def executor_key(tmp_path: Path) -> KeyPair:
    """A fresh executor key and keyring in a temp dir."""
    return make_key(tmp_path / "executor", "executor")
