"""A changed symbol's name and the module it lives in; what a ``covers`` entry names (exact).

A symbol is ``<module>.<qualname>`` (``textkit.core.slugify``, ``billing.Line.net``,
``pkg.mod.outer.<locals>.inner``) or ``module:<module>`` for a module's own statements. The
string alone is ambiguous (``pkg.sub.f`` may be function ``f`` of module ``pkg.sub`` or method
``f`` of class ``sub`` in ``pkg``), so the gate's symbols are :class:`Symbol` values: plain
strings everywhere (receipts, ledgers, sorting, JSON) that also carry their ``module``.

``covers`` is exact (see ``docs/gate-analysis.md``): ``pkg.mod.func`` covers that function and
its nested definitions, ``pkg.mod.Class`` the class and its methods, ``pkg.mod`` the module-level
code and every symbol defined in that file, never another module or a sub-package. A plain string
whose module is unknown is covered only by an entry that names it exactly, and a symbol of no
module (one name the patch changed in two modules) by nothing (fail closed).
"""

from __future__ import annotations

import hashlib

__all__ = [
    "KINDS", "MAX_TARGETS", "MAX_TARGET_NAME", "MODULE_PREFIX", "WIRE_NAME_CHARS", "Cover",
    "Symbol", "covers", "module_of", "wire_name",
]  # fmt: skip

#: What a ``covers`` entry can name in the base tree.
KINDS = ("module", "class", "function")

MODULE_PREFIX = "module:"

#: Targets of one ``Execute`` (the executor refuses more). A client sends at most this many, the
#: innermost first; a changed symbol beyond them gets no trace, so its runs never executed it
#: (no credit) — the check is still scored, never refused.
MAX_TARGETS = 1024
#: The longest target name the executor accepts.
MAX_TARGET_NAME = 512
#: Names on the wire are at most this long: a longer symbol name goes as a hash of it (the client
#: maps it back), so one item record of the reporter naming every target stays small.
WIRE_NAME_CHARS = 64


def wire_name(name: str) -> str:
    """The name a target carries to the executor (and back in ``executed``): ``name`` itself when
    short, else ``sha256:`` and 40 hex digits of it (a symbol name never holds ``:``)."""
    if len(name) <= WIRE_NAME_CHARS:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    return f"sha256:{digest[:40]}"


class Symbol(str):
    """A symbol name that knows its module (``Symbol.make("pkg.mod", "f") == "pkg.mod.f"``)."""

    module: str

    def __new__(cls, text: str, module: str) -> Symbol:
        self = super().__new__(cls, text)
        self.module = module
        return self

    @classmethod
    def make(cls, module: str, qualname: str) -> Symbol:
        """``module.qualname``; an empty qualname is the module's own code ``module:<module>``."""
        text = f"{MODULE_PREFIX}{module}" if not qualname else f"{module}.{qualname}"
        return cls(text, module)

    def __reduce__(self) -> tuple[object, ...]:
        return (Symbol, (str(self), self.module))


class Cover(str):
    """A ``covers`` entry resolved in the base tree: the ``kind`` it names there (``module``,
    ``class`` or ``function``, a method included), the ``module`` that defines it and its
    ``qualname`` in that module (``""`` for a module). ``Cover("billing.prorate", "function",
    "billing", "prorate")`` covers the function ``prorate`` of ``billing/__init__.py`` and what is
    defined inside it, never a module ``billing/prorate.py`` a patch adds under that name."""

    kind: str
    module: str
    qualname: str

    def __new__(cls, text: str, kind: str, module: str, qualname: str = "") -> Cover:
        if kind not in KINDS:
            raise ValueError(f"unknown kind of a covers entry: {kind!r}")
        self = super().__new__(cls, text)
        self.kind, self.module, self.qualname = kind, module, qualname
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (Cover, (str(self), self.kind, self.module, self.qualname))


def module_of(symbol: str) -> str | None:
    """The module of ``symbol`` when it is known: a :class:`Symbol`, or a ``module:`` name."""
    if isinstance(symbol, Symbol):
        return symbol.module
    if symbol.startswith(MODULE_PREFIX):
        return symbol[len(MODULE_PREFIX) :]
    return None


def covers(cover: str, symbol: str) -> bool:
    """Whether the ``covers`` entry ``cover`` names ``symbol`` (exact; see the module docstring).

    A :class:`Cover` (resolved in the base, what ``check`` uses) matches by kind: its module must
    be the symbol's module, and a class or function entry must name the symbol's qualified name
    or a dotted prefix of it. A plain string entry (not resolved) matches by name."""
    module = module_of(symbol)
    if isinstance(cover, Cover):
        return _covers_resolved(cover, symbol, module)
    if module is None:
        return cover == symbol
    if not module:  # one name from two modules (client.analysis.patch.touched): nothing covers it
        return False
    if cover == module:
        return True  # a module entry: its own code and every symbol defined in that file
    if symbol.startswith(MODULE_PREFIX) or not cover.startswith(module + "."):
        return False
    qualname = symbol[len(module) + 1 :]
    wanted = cover[len(module) + 1 :]
    return qualname == wanted or qualname.startswith(wanted + ".")


def _covers_resolved(cover: Cover, symbol: str, module: str | None) -> bool:
    if not module or module != cover.module:
        return False  # a symbol of no module, of an unknown one, or of another module
    if cover.kind == "module":
        return True  # its own code and every symbol defined in that file
    if symbol.startswith(MODULE_PREFIX):
        return False
    qualname = symbol[len(module) + 1 :]
    return qualname == cover.qualname or qualname.startswith(cover.qualname + ".")
