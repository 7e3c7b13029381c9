"""A request verified and materialized (``executord/runs/prepared.py``): the trees placed as
read-only copies, the digest recomputed from the bytes that get mounted, all removed after."""

from __future__ import annotations

import stat
from pathlib import Path

from executord.inside import FILES
from executord.runs.prepared import cleanup, observed_digest, prepare
from tests.unit.test_executord_runs import _input, _rig


def test_prepare_places_copies_and_cleanup_removes_them(tmp_path: Path) -> None:
    """The fixtures and the inside modules are read-only copies (never the package's
    ``__init__``); the digest of the placed bytes is the signed one; cleanup leaves nothing."""
    rig = _rig(tmp_path)
    prepared = prepare(
        _input(rig), keyring=rig.executor.keyring, store=rig.store, work_dir=rig.executor.work_dir
    )
    assert prepared.observed_digest == prepared.statement.digest
    inside = {p.name for p in prepared.inside_dir.iterdir()}
    assert set(FILES) <= inside
    assert "__init__.py" not in inside
    fixture = prepared.fixture_dir / "a.json"
    assert stat.S_IMODE(fixture.stat().st_mode) == 0o444
    assert (prepared.workspace_dir / "billing" / "__init__.py").read_bytes() == b"x = 1\n"
    cleanup(prepared)
    assert not prepared.req_dir.exists()


def test_the_digest_is_of_the_bytes_in_the_tree_not_the_signed_one(tmp_path: Path) -> None:
    """A fixture changed after materializing changes the observed digest (the executor then
    runs nothing); a missing one reads as ``unreadable``."""
    rig = _rig(tmp_path)
    prepared = prepare(
        _input(rig), keyring=rig.executor.keyring, store=rig.store, work_dir=rig.executor.work_dir
    )
    fixture = prepared.fixture_dir / "a.json"
    fixture.chmod(0o644)
    fixture.write_bytes(b'{"a": 2}\n')
    assert observed_digest(prepared) not in {prepared.statement.digest, "unreadable"}
    fixture.unlink()
    assert observed_digest(prepared) == "unreadable"
    cleanup(prepared)
