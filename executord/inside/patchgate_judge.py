"""patchgate's judge plugin: in the judge, production modules are proxies for the subject's.

Loaded inside the sandbox with ``-p patchgate_judge`` (after ``-p patchgate_reporter``), from the
same read-only mount; stdlib and pytest only. At import it takes the call link's fds and its
config out of the environment (``PATCHGATE_JUDGE_LINK``, ``PATCHGATE_JUDGE_CONFIG``: see
``wire.py``), checks the link (``hello``), and puts a finder first on ``sys.meta_path`` that
answers every import of a production top-level name (and its submodules) with a ``ProxyModule``
(``proxies.py``): the module is imported in the subject, never here. The finder goes in when
the plugin is imported (``-p`` plugins load before the initial conftests, which may import
production code); a production module already imported in the judge then is a usage error (its
code would run here). In the judge's zygote, which configures pytest once for a mutation batch
(``PATCHGATE_JUDGE_DEFERRED``, ``zygote.py``), the finder goes in the same way with no subject
behind it and refuses every production import; each forked judge gives it its run's link
(``connect``) before anything of the run imports.

Around each test it tells the subject when the test's setup begins and its teardown ends, so the
subject attributes what it executed to the test. The directories a test hands to production code
— its ``tmp_path`` and its output area (``PATCHGATE_OUTPUT``) — are shared with the subject
through the judge's one supplementary group (``2770``; their parents only traversable by it),
when the judge has one (switched users); nothing else of the judge's is. Without
``PATCHGATE_JUDGE_LINK`` the plugin does nothing (a single-process run).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

__all__ = ["CLIENT", "FINDER", "ProxyFinder", "connect", "install", "relink", "share"]


def _load(stem: str) -> ModuleType:
    name = f"_patchgate_{stem}"
    mod = sys.modules.get(name)
    if mod is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{stem}.py")
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


if TYPE_CHECKING:
    from executord.inside import judgelink, proxies, wire
else:
    wire = _load("wire")
    proxies = _load("proxies")
    judgelink = _load("judgelink")


class _ProxyLoader(importlib.abc.Loader):
    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self._module

    def exec_module(self, module: ModuleType) -> None:
        if isinstance(module, proxies.ProxyModule):
            module._pg_imported()


class ProxyFinder(importlib.abc.MetaPathFinder):
    """Imports of production names become proxies of the subject's modules."""

    def __init__(self, client: judgelink.Client) -> None:
        self.client = client

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".", maxsplit=1)[0] not in self.client.production:
            return None
        parts = fullname.split(".")
        if "tests" in parts[1:-1] and _TEST_MODULE.match(parts[-1]):
            # a test module or conftest inside a production package (``pkg/tests/``): harness
            # (a patch touching it moved the oracle, R7), so the base's own file, run here;
            # the package around it and any other module in it stay production
            return _judge_side(parts)
        handle = self.client.request("import", module=fullname)
        if not isinstance(handle, proxies.Handle):
            raise ImportError(f"the subject did not answer {fullname!r} with a module")
        module = proxies.ProxyModule(fullname, handle)
        package = object.__getattribute__(handle, "_pg_ref").get("package") is True
        spec = importlib.machinery.ModuleSpec(fullname, _ProxyLoader(module), is_package=package)
        if package:
            spec.submodule_search_locations = []
        return spec


#: A module name pytest collects or loads as harness by default (``test_*.py``, ``*_test.py``,
#: ``conftest.py``).
_TEST_MODULE = re.compile(r"\Atest_\w*\Z|\A\w*_test\Z|\Aconftest\Z")


def _judge_side(parts: list[str]) -> importlib.machinery.ModuleSpec | None:
    """The spec of a test module inside a production package, from the judge's ``sys.path``
    (pytest's ``prepend`` put the package's root there): a real module of the judge."""
    for entry in sys.path:
        where = os.path.join(os.path.abspath(entry or "."), *parts[:-1])
        if os.path.isfile(os.path.join(where, "__init__.py")):
            return importlib.machinery.PathFinder.find_spec(".".join(parts), [where])
    return None


def _fds(name: str) -> list[int]:
    raw = os.environ.pop(name, "")
    return [int(x) for x in raw.split(",") if x.strip().isdigit()]


def install(client: judgelink.Client) -> ProxyFinder:
    """Put the proxy finder first; refuse when a production module is already real here."""
    real = sorted(
        n
        for n, m in sys.modules.items()
        if n.split(".")[0] in client.production and not isinstance(m, proxies.ProxyModule)
    )
    if real:
        raise pytest.UsageError(
            f"production module {real[0]} was imported in the judge before the proxies were "
            "installed (a plugin or a startup hook imported it): it cannot be judged"
        )
    finder = ProxyFinder(client)
    sys.meta_path.insert(0, finder)
    return finder


def _link() -> tuple[wire.Link, dict[str, Any]] | None:
    """The call link and the judge's config, taken out of the environment."""
    link_fds = _fds("PATCHGATE_JUDGE_LINK")
    config = wire.role_env("PATCHGATE_JUDGE_CONFIG")
    os.environ.pop("PATCHGATE_JUDGE_CONFIG", None)
    if len(link_fds) != 2:
        return None
    return wire.Link(link_fds[0], link_fds[1], wire.Caps.from_json(config.get("caps"))), config


def _production(config: dict[str, Any]) -> frozenset[str]:
    """The production top-level names of the judge's config."""
    return frozenset(str(p) for p in config.get("production", ()) if str(p))


def _connect(*, record: bool = False) -> judgelink.Client | None:
    got = _link()
    if got is None:
        return None
    link, config = got
    timeout_ms = config.get("call_timeout_ms")
    timeout_s = timeout_ms / 1000 if type(timeout_ms) is int and timeout_ms > 0 else 60.0
    client = judgelink.Client(link, timeout_s, _production(config))
    if record:
        client.record()
    if client.request("hello") != wire.PROTOCOL:
        raise pytest.UsageError("the subject does not speak the judge's protocol")
    return client


def _shared_gid() -> int | None:
    """The group the judge shares with the subject (its one supplementary group), if any."""
    groups = [g for g in os.getgroups() if g != os.getgid()]
    return groups[0] if len(groups) == 1 else None


def share(path: str) -> None:
    """Let the subject use ``path``: group rwx + setgid on it, group x on its parents up to the
    first one the judge does not own."""
    gid = _shared_gid()
    if gid is None or not path:
        return
    try:
        os.chown(path, -1, gid)
        os.chmod(path, 0o2770)  # noqa: S103 - group only: the subject's uid is in it, no other
    except OSError:
        return
    parent = os.path.dirname(os.path.abspath(path))
    while parent != os.path.dirname(parent):
        try:
            st = os.stat(parent)
            if st.st_uid != os.getuid():
                return
            os.chown(parent, -1, gid)
            os.chmod(parent, (st.st_mode & 0o7777) | 0o010)  # noqa: S103 - group traverse only
        except OSError:
            return
        parent = os.path.dirname(parent)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Any:
    """A test's ``tmp_path`` (or ``tmpdir``) is shared with the subject."""
    outcome = yield
    if CLIENT is not None and fixturedef.argname in ("tmp_path", "tmpdir"):
        with contextlib.suppress(Exception):
            share(str(outcome.get_result()))


def _nodeid(nodeid: str) -> str:
    """The node id as the reporter sends it (relative to the working directory)."""
    reporter = sys.modules.get("patchgate_reporter")
    prefix = getattr(getattr(reporter, "_REPORTER", None), "_prefix", "")
    return f"{prefix}{nodeid}"


def _phase(kind: str, nodeid: str) -> None:
    if CLIENT is None:
        return
    CLIENT.current = _nodeid(nodeid) if kind == "begin" else ""
    if CLIENT.dead:
        return
    try:
        CLIENT.request(kind, nodeid=_nodeid(nodeid))
    except Exception:
        return


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    """A test during which the link refused something (a value it cannot carry, an answer it
    cannot rebuild, a construct it cannot judge, the subject lost) fails at its teardown with
    the reason, so it is ``error`` even when the test caught the refusal; a refusal outside
    any test (collection, a module-level import) voids every test after it."""
    outcome = yield
    if CLIENT is None or call.when != "teardown":
        return
    why = CLIENT.voids.pop(_nodeid(item.nodeid), "") or CLIENT.voids.get("", "")
    report = outcome.get_result()
    if why and not report.failed:
        report.outcome = "failed"
        report.longrepr = f"the judge's link refused this test: {why}"


@pytest.hookimpl(trylast=True)
def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    if CLIENT is not None:
        share(os.environ.get("PATCHGATE_OUTPUT", ""))  # made by the reporter's logstart
    _phase("begin", nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    _phase("end", nodeid)


def pytest_unconfigure(config: pytest.Config) -> None:
    if CLIENT is not None:
        CLIENT.bye()


class _NoSubject:
    """The finder's client in the judge's zygote while it configures pytest (``zygote.py``):
    there is no subject yet, so every production import is refused there."""

    def __init__(self, production: frozenset[str]) -> None:
        self.production = production

    def request(self, kind: str, **fields: Any) -> Any:
        raise ImportError(
            f"production module {fields.get('module')!r} imported while the judge's zygote "
            "configures pytest: it can only be imported by a run"
        )


def _deferred() -> tuple[judgelink.Client | None, ProxyFinder | None]:
    """In the judge's zygote (``PATCHGATE_JUDGE_DEFERRED``): no client, a finder that refuses."""
    config = wire.role_env("PATCHGATE_JUDGE_CONFIG")
    return None, install(_NoSubject(_production(config)))  # type: ignore[arg-type]


def connect(*, record: bool = False) -> None:
    """A judge forked by a configured zygote: the finder and the hooks get this run's link
    (``record``: every message on it noted, for a zygote that collects once)."""
    global CLIENT  # noqa: PLW0603 - the module's one client, as at a fresh run's import
    if FINDER is None or CLIENT is not None:
        raise pytest.UsageError("the judge plugin was not deferred: it cannot connect again")
    client = _connect(record=record)
    if client is None:
        raise pytest.UsageError("a forked judge has no call link")
    FINDER.client = client
    CLIENT = client


def relink(events: list[tuple[bool, dict[str, Any]]]) -> bool:
    """A judge forked by a zygote that collected once: this run's link for the one client, the
    collection's messages replayed on it (``judgelink.Client.replay``); False when this run's
    subject did not answer as the collection's did."""
    got = _link()
    if CLIENT is None or got is None:
        raise pytest.UsageError("a judge forked after the collection has no call link")
    return CLIENT.replay(got[0], events)


# At import (``-p`` plugins load before the initial conftests, which may import production code).
if os.environ.get("PATCHGATE_JUDGE_DEFERRED") == "1":
    CLIENT, FINDER = _deferred()
else:
    CLIENT = _connect()
    FINDER = install(CLIENT) if CLIENT is not None else None
