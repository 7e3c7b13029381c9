"""The laptop lane's executor instance comes from its state directory (issue 12: two lanes on one
engine never sweep each other's sandboxes)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from client.lanes.daemons import DaemonProc, LaneState
from client.lanes.local import lane_instance


def test_two_state_dirs_two_instances(tmp_path: Path) -> None:
    """Two lanes (two state directories) get two different label values."""
    assert lane_instance(tmp_path / "a") != lane_instance(tmp_path / "b")


def test_one_state_dir_one_instance_however_it_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relative, absolute or through a symlink: one directory is one instance, so a restarted lane
    sweeps what its previous executor left."""
    (tmp_path / "state").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "state")
    monkeypatch.chdir(tmp_path)
    names = {lane_instance(Path("state")), lane_instance(tmp_path / "state"),
             lane_instance(tmp_path / "link"), lane_instance(Path("./x/../state"))}  # fmt: skip
    assert len(names) == 1


def test_instance_is_never_the_shared_default(tmp_path: Path) -> None:
    """A short, label-safe value, never the `default` that every bare executor shares."""
    name = lane_instance(tmp_path)
    assert re.fullmatch(r"lane-[0-9a-f]{12}", name)
    assert name != "default"


def test_lane_state_keeps_the_instance_and_reads_older_files(tmp_path: Path) -> None:
    """lane.json records the instance; one written before it existed still loads."""
    proc = DaemonProc(name="x", pid=os.getpid(), address="unix:/x", log="/x")
    lane = LaneState(state_dir=str(tmp_path), operator_keyring="k", signer=proc, executor=proc,
                     instance=lane_instance(tmp_path))  # fmt: skip
    lane.save()
    assert LaneState.load(tmp_path) == lane
    raw = (tmp_path / "lane.json").read_text(encoding="utf-8").replace('"instance"', '"other"')
    (tmp_path / "lane.json").write_text(raw, encoding="utf-8")
    assert LaneState.load(tmp_path).instance == ""  # type: ignore[union-attr]
