"""The tree scored is the tree merged (issue 22, item 4): git attributes and submodules.

Two refusals:

* **in the patch** (:func:`patch_git_metadata`): a patch that adds, edits or deletes a
  ``.gitattributes`` or ``.gitmodules`` at any depth, or adds, changes or removes a gitlink (mode
  ``160000``, a submodule), is ``reject_provenance``: attributes change the bytes a checkout or
  ``git archive`` of the merged commit makes (``export-subst`` substitutes ``$Format:%H$`` into
  code), and a submodule brings code the gate never saw. ``git apply`` without an index writes a
  gitlink as an **empty directory** (and the tree comparison, which has no directories, would see
  nothing), so a gitlink is found two ways: from the patch's own mode lines
  (``new file mode 160000``, ``index a..b 160000``) and from the trees (a directory the patched
  tree has, empty, that the base tree has not). The header is authoritative for *what* it is
  (only it says ``160000``); the tree is the check that nothing the header parser missed left a
  trace. Either one refuses.
* **in the base** (:func:`base_attribute_problems`): a base whose ``.gitattributes`` (read from
  the commit's objects, never from an extracted tree) give a **scored** file of the base a
  byte-changing attribute is a configuration error (exit 78) naming the file and the attribute:
  ``export-subst``, ``export-ignore``, ``ident``, ``filter``, ``working-tree-encoding``,
  ``eol=crlf`` (``text eol=crlf`` included). Plain ``text``, ``text=auto``, ``eol=lf``,
  ``-text``/``binary`` and ``diff``/``merge`` attributes change nothing on Linux and are fine.
  Macros (``[attr]name ...`` of the root file, and the built-in ``binary``) are expanded. A file
  is scored (:func:`scored`) when Python may load it or the gate reads its bytes: a ``.py``,
  ``.pyi`` or ``.pth`` anywhere, any file under a source root of its own (``src/``), any file
  inside a regular package of the root layout (package data), anything under the fixture root, the
  pins or an oracle path, the harness configuration files and the environment lock. A changelog's
  ``eol=crlf`` or a ``*.bat`` file's is not.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from client.analysis.patch.diffparse import gitlinks
from client.analysis.patch.treediff import PathChange, new_empty_dirs
from patchgate import git
from patchgate.errors import PatchgateError
from patchgate.pins import ProjectConfig

__all__ = [
    "GIT_METADATA",
    "AttributeLine",
    "attribute_problems",
    "base_attribute_problems",
    "byte_changing",
    "parse_attributes",
    "patch_git_metadata",
    "scored",
]

GIT_METADATA = frozenset({".gitattributes", ".gitmodules"})
_GIT_TIMEOUT = 120
_MAX_ATTR_BYTES = 1 << 20
_BUILTIN_MACROS = {"binary": (("diff", False), ("merge", False), ("text", False))}
_VERB = {"added": "adds", "deleted": "deletes"}
State = bool | str | None  # True set, False unset, a value, None unspecified


def patch_git_metadata(
    changes: Sequence[PathChange], patch: bytes, base: Path, patched: Path
) -> tuple[str, ...]:
    """One ``reject_provenance`` reason per ``.gitattributes``/``.gitmodules`` the patch touched
    and per gitlink in it (see the module docstring)."""
    reasons = [
        f"the patch {_VERB.get(c.status, 'changes')} git metadata {c.path}: "
        "attributes and submodules change what a checkout of the merged commit holds"
        for c in changes
        if c.path.rsplit("/", 1)[-1] in GIT_METADATA
    ]
    links = set(gitlinks(patch))
    reasons.extend(
        f"the patch adds or changes a gitlink (submodule, mode 160000) at {p}: code the gate "
        "never sees"
        for p in sorted(links)
    )
    reasons.extend(
        f"the patched tree has a new empty directory {d} (a gitlink that git apply writes as an "
        "empty directory): refused"
        for d in new_empty_dirs(base, patched)
        if d not in links
    )
    return tuple(reasons)


@dataclass(frozen=True)
class AttributeLine:
    """One line of a ``.gitattributes``: where, its pattern, and the states it sets."""

    where: str
    line: int
    pattern: str
    states: tuple[tuple[str, State], ...]


def _states(
    tokens: Iterable[str], macros: Mapping[str, Sequence[tuple[str, State]]]
) -> list[tuple[str, State]]:
    out: list[tuple[str, State]] = []
    for token in tokens:
        if token.startswith("-"):
            out.append((token[1:], False))
        elif token.startswith("!"):
            out.append((token[1:], None))
        elif "=" in token:
            name, _, val = token.partition("=")
            out.append((name, val))
        else:
            out.append((token, True))
            out.extend(macros.get(token, ()))
    return out


def parse_attributes(
    text: str, where: str, macros: dict[str, Sequence[tuple[str, State]]] | None = None
) -> list[AttributeLine]:
    """The lines of one ``.gitattributes`` (``macros`` collects and expands ``[attr]`` lines)."""
    macros = macros if macros is not None else dict(_BUILTIN_MACROS)
    lines: list[AttributeLine] = []
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith('"'):
            end = stripped.find('"', 1)
            pattern, rest = (stripped[1:end], stripped[end + 1 :]) if end > 0 else (stripped, "")
        else:
            pattern, _, rest = stripped.partition(" ")
            if "\t" in pattern:
                pattern, _, more = pattern.partition("\t")
                rest = more + " " + rest
        tokens = rest.split()
        if pattern.startswith("[attr]"):
            macros[pattern[len("[attr]") :]] = _states(tokens, macros)
            continue
        lines.append(AttributeLine(where, number, pattern, tuple(_states(tokens, macros))))
    return lines


def byte_changing(name: str, state: State) -> bool:
    """Whether an attribute in this state makes checkout or export bytes differ on Linux."""
    if name in {"export-subst", "export-ignore", "ident"}:
        return state is True
    if name in {"filter", "working-tree-encoding"}:
        return state is True or isinstance(state, str)
    if name == "eol":
        return isinstance(state, str) and state.lower() == "crlf"
    return False


def _regex(pattern: str, directory: str) -> re.Pattern[str]:
    """gitattributes matching: no slash matches the name at any depth below ``directory``."""
    anchored = "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    out, i = "", 0
    while i < len(body):
        if body.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif body.startswith("/**", i) and i + 3 == len(body):
            out, i = out + "/.*", i + 3
        elif body[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif body[i] == "?":
            out, i = out + "[^/]", i + 1
        elif body[i] == "[" and (close := body.find("]", i + 1)) > i:
            out, i = out + body[i : close + 1].replace("[!", "[^"), close + 1
        else:
            out, i = out + re.escape(body[i]), i + 1
    prefix = re.escape(directory + "/") if directory else ""
    if anchored:
        return re.compile(f"{prefix}{out}")
    return re.compile(f"{prefix}(?:.*/)?{out}")


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Through :func:`patchgate.git.run`: nothing the repository configures runs."""
    return git.run(repo, *args, timeout=_GIT_TIMEOUT)


def _tree_files(repo: Path, commit: str) -> list[str]:
    proc = _git(repo, "ls-tree", "-r", "-z", "--name-only", "--full-tree", commit)
    if proc.returncode != 0:
        raise PatchgateError(f"git ls-tree {commit}: {proc.stderr.decode(errors='replace')}")
    return [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


_PYTHON_SUFFIXES = (".py", ".pyi", ".pth")
_HARNESS_FILES = frozenset(
    {"pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", "patchgate.toml", "conftest.py"}
)


def _under(path: str, directory: str) -> bool:
    directory = directory.strip("/")
    return not directory or path == directory or path.startswith(directory + "/")


def scored(files: Sequence[str], config: ProjectConfig) -> frozenset[str]:
    """The files of a tree whose bytes the gate scores or materializes, or Python may load (the
    module docstring says which); every other file's attributes cannot change a verdict."""
    roots = config.roots(has_src=any(f.startswith("src/") for f in files))
    packages = {f.rpartition("/")[0] for f in files if f.endswith("/__init__.py")}
    fixed = [config.fixture_root, config.pins_dir, *config.oracle_paths]
    lock = config.environment.requirements if config.environment else None
    out = set()
    for path in files:
        parent = path.rpartition("/")[0]
        # a source root of its own (src/) holds nothing but what is shipped, namespace packages'
        # data included; under the repository root only a regular package's files count
        in_package = any(root.strip("/") and _under(path, root) for root in roots) or (
            any(parent == pkg or parent.startswith(pkg + "/") for pkg in packages if pkg)
            and any(_under(path, root) for root in roots)
        )
        if (
            path.endswith(_PYTHON_SUFFIXES)
            or path.rsplit("/", 1)[-1] in _HARNESS_FILES
            or path == lock
            or in_package
            or any(_under(path, d) for d in fixed if d)
        ):
            out.add(path)
    return frozenset(out)


def base_attribute_problems(repo: Path, commit: str, config: ProjectConfig) -> tuple[str, ...]:
    """One line per scored file of ``commit`` whose attributes change its checkout or export
    bytes (``config``: the base's own configuration, which says what is scored)."""

    def blob(path: str) -> bytes | None:
        proc = _git(repo, "cat-file", "blob", f"{commit}:{path}")
        return proc.stdout if proc.returncode == 0 else None

    return attribute_problems(_tree_files(repo, commit), blob, config)


def attribute_problems(
    files: Sequence[str], read: Callable[[str], bytes | None], config: ProjectConfig
) -> tuple[str, ...]:
    """The problems of a tree given its file list and a reader of its ``.gitattributes`` files."""
    attr_files = sorted(
        (p for p in files if p.rsplit("/", 1)[-1] == ".gitattributes"),
        key=lambda p: (p.count("/"), p),
    )
    if not attr_files:
        return ()
    macros: dict[str, Sequence[tuple[str, State]]] = dict(_BUILTIN_MACROS)
    rules: list[tuple[re.Pattern[str], AttributeLine]] = []
    for path in attr_files:
        raw = read(path)
        if raw is None or len(raw) > _MAX_ATTR_BYTES:
            return (f"{path}: cannot read it (or larger than 1 MiB)",)
        directory = path.rpartition("/")[0]
        text = raw.decode("utf-8", "replace")
        for line in parse_attributes(text, path, macros if not directory else dict(macros)):
            rules.append((_regex(line.pattern, directory), line))
    problems: list[str] = []
    for path in sorted(scored(files, config)):
        final: dict[str, tuple[State, AttributeLine]] = {}
        for regex, line in rules:
            if regex.fullmatch(path):
                for name, state in line.states:
                    final[name] = (state, line)
        for name, (state, line) in sorted(final.items()):
            if byte_changing(name, state):
                shown = name if state is True else f"{name}={state}"
                problems.append(
                    f"{path}: the base's {line.where} (line {line.line}) gives it {shown}, which "
                    "makes its checkout or export bytes differ from its blob: the tree scored "
                    "would not be the tree merged"
                )
    return tuple(problems)
