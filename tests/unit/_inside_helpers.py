"""Helpers for the in-sandbox code's unit tests: load it as the sandbox does (by file path, under
private names), and run a real subject process over pipes (no Docker)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import executord.inside

INSIDE = Path(executord.inside.__file__).resolve().parent


def load(stem: str, name: str = "") -> ModuleType:
    """An ``executord/inside`` module loaded by path, as the sandbox loads it."""
    name = name or f"_patchgate_{stem}"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, INSIDE / f"{stem}.py")
        assert spec is not None
        assert spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


judge = load("patchgate_judge", "patchgate_judge")
proxies = sys.modules["_patchgate_proxies"]
judgelink = sys.modules["_patchgate_judgelink"]
pwire = sys.modules["_patchgate_wire"]


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


class Pair:
    """A subject process and the judge's client of it."""

    def __init__(self, proc: subprocess.Popen[bytes], client: Any, report_r: int) -> None:
        self.proc, self.client, self.report_r = proc, client, report_r

    def module(self, name: str) -> Any:
        module = proxies.ProxyModule(name, self.client.request("import", module=name))
        module._pg_imported()  # as the judge's loader does at the end of the import
        return module

    def records(self) -> list[dict[str, Any]]:
        """The subject's executed report so far (after it ended)."""
        data = b""
        while chunk := os.read(self.report_r, 1 << 16):
            data += chunk
        return [json.loads(line) for line in data.splitlines()]


@contextmanager
def subject(
    tmp_path: Path,
    files: dict[str, str],
    production: tuple[str, ...],
    *,
    timeout_s: float = 30.0,
    targets: list[dict[str, Any]] | None = None,
    caps: dict[str, int] | None = None,
) -> Iterator[Pair]:
    src = tmp_path / "src"
    write_tree(src, files)
    tpath = ""
    if targets is not None:
        tpath = str(tmp_path / "targets.json")
        Path(tpath).write_text(json.dumps(targets), encoding="utf-8")
    j_r, s_w = os.pipe()
    s_r, j_w = os.pipe()
    rep_r, rep_w = os.pipe()
    config = {"production": list(production), "source_roots": [str(src)], "targets": tpath,
              "caps": caps or {}}  # fmt: skip
    env = {
        "PATCHGATE_SUBJECT_LINK": f"{s_r},{s_w}",
        "PATCHGATE_SUBJECT_REPORT_FD": str(rep_w),
        "PATCHGATE_SUBJECT_CONFIG": json.dumps(config),
        "PATH": os.environ.get("PATH", ""),
    }
    proc = subprocess.Popen(
        [sys.executable, "-I", str(INSIDE / "subject.py")],
        pass_fds=(s_r, s_w, rep_w),
        env=env,
        cwd=str(tmp_path),
    )
    for fd in (s_r, s_w, rep_w):
        os.close(fd)
    link = pwire.Link(j_r, j_w, pwire.Caps.from_json(caps or {}))
    client = judgelink.Client(link, timeout_s, frozenset(production))
    pair = Pair(proc, client, rep_r)
    try:
        yield pair
    finally:
        client.bye()
        link.close()
        if proc.poll() is None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        os.close(rep_r)


def supervisor_config(tmp_path: Path, tests: list[str], **over: Any) -> Path:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(INSIDE),
           "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    cfg: dict[str, Any] = {
        "v": 1,
        "socket": str(tmp_path / "report.sock"),
        "nonce": "n0nce",
        "switch_users": False,
        "test_only": True,
        "judge": {
            "argv": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                     "-p", "patchgate_reporter", "-p", "patchgate_judge", *tests],
            "uid": 0, "gid": 0, "groups": [], "env": env, "cwd": str(tmp_path),
        },
        "subject": {
            "argv": [sys.executable, str(INSIDE / "subject.py")],
            "uid": 0, "gid": 0, "groups": [], "env": {"PATH": env["PATH"]},
            "cwd": str(tmp_path),
        },
        "bound_ms": 0,
        "grace_ms": 500,
        "deadline_ms": 0,
        "call_timeout_ms": 60_000,
        "production": ["pgshop"],
        "source_roots": [str(tmp_path / "src")],
        "targets": "",
    }  # fmt: skip
    cfg.update(over)
    path = tmp_path / "supervisor.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def run_supervisor(config: Path) -> tuple[int, list[dict[str, Any]], str]:
    """Run the supervisor with a listening report socket; its exit status, records, stderr."""
    path = str(config.parent / "report.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    data = bytearray()

    def read() -> None:
        with contextlib.suppress(OSError):  # the listener closed: no supervisor connected
            conn, _ = listener.accept()
            with conn:
                while chunk := conn.recv(1 << 16):
                    data.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", str(INSIDE / "supervisor.py"), str(config)],
            capture_output=True,
            check=False,
            timeout=300,
        )
        if proc.returncode in (75, 78):  # refused before connecting: nothing to read
            return proc.returncode, [], proc.stderr.decode(errors="replace")
        reader.join(timeout=60)
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes an accept that never got a connection
        listener.close()
        reader.join(timeout=60)
        os.unlink(path)
    records = [json.loads(line) for line in bytes(data).splitlines()]
    return proc.returncode, records, proc.stderr.decode(errors="replace")
