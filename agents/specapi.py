"""The public API a spec states for each module: signatures in backticks, listings in code
blocks, "a class `X`" in prose (which of its signatures are methods is the model's to
read); in a text about several modules, each signature is the module's it follows.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from agents.checks import parsed, spec_section
from agents.specread import BUILTIN_NAMES, api_name, parse_params

__all__ = ["spec_signatures"]


_BACKTICKED_CALL = re.compile(r"`((?:def\s+|class\s+)?[A-Za-z_][\w.]*\([^`]*\)(?:\s*->\s*[^`]+)?)`")
_SIGNATURE = re.compile(
    r"^\s*(?:def\s+|class\s+)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)\s*(\((.*)\))?")


def spec_signatures(spec: str, path: str, others: Sequence[str] = ()) -> list[str]:
    """The public API the spec's part about ``path`` states, without the signatures its
    parts about ``others`` give and calls with values (``add(1, 2)``)."""
    section = spec_section(spec, path)
    theirs = {s for o in others for s in _signatures_in(spec_section(spec, o))
              if spec_section(spec, o) is not spec}
    found = [s for s in _signatures_in(section) if s not in theirs]
    if section is not spec or not others:
        return found
    # one text for several modules: a signature belongs to the module named last before
    # it ("`tokens.py` with `tokenize(...)`, and `evaluator.py` with `evaluate(...)`")
    named = sorted((m.start(), p) for p in (path, *others)
                   for m in re.finditer(rf"(?<![\w/]){re.escape(p)}(?!\w)", spec))
    mine = []
    for sig in found:
        at = _anchor(spec, sig)
        owner = next((p for start, p in reversed(named) if start < at), None)
        if at >= 0 and owner in (None, path):
            mine.append(sig)
    return mine


def _anchor(spec: str, sig: str) -> int:
    """Where ``sig`` (or, put together by the readers, its class) is given; -1: nowhere."""
    head = sig.removeprefix("class ").split("(")[0].strip()
    cls, _, member = head.partition(".")
    for probe in (sig, f"`{member}(" if member else None, f"`{cls}`", f"`{cls}("):
        if probe and (at := spec.find(probe)) >= 0:
            return at
    return -1


_SIGNATURE_LINE = re.compile(
    r"^[ \t]*(?:[-*][ \t]+)?(?:def[ \t]+)?([A-Za-z_]\w*[ \t]*\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\)"
    r"(?:[ \t]*->[ \t]*[^\n:]+?)?)[ \t]*:?[ \t]*$", re.M)
_CLASS_LINE = re.compile(r"^[ \t]*class[ \t]+([A-Za-z_]\w*)[ \t]*(\([^)\n]*\))?[ \t]*:", re.M)
_CLASS_NAMED = re.compile(
    r"\b(?:(?:[Dd]ata)?[Cc]lass(?:es)?|[Ee]xception|[Ee]num),?[ \t]+`([A-Z]\w*)`")
_CLASS_PROSE = re.compile(  # "the first dataclass is `Point`", "`Rect` is a frozen dataclass"
    r"\b(?:[Dd]ata)?[Cc]lass\s+(?:is|named|called)\s+`([A-Z]\w*)`"
    r"|`([A-Z]\w*)`,?\s+(?:is\s+)?an?\s+(?:[\w-]+\s+){0,2}(?:data)?class\b")
_SUBCLASS = re.compile(r"`([A-Z]\w*)`,?\s*(?:\(|which is\s+|that is\s+)?an?\s+subclass\s+of\s+"
                       r"`([A-Z]\w*)`")
_FENCED = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)


def _python_listing(block: str) -> list[str] | None:
    """The API a code block that parses as Python declares (``def``s, ``class``es and
    their methods as ``X.m(...)``); None when it declares none (an example script)."""
    if (tree := parsed(block)) is None:
        return None
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(_def(node.name, node))
        elif isinstance(node, ast.ClassDef):
            bases = ", ".join(ast.unparse(b) for b in node.bases)
            out.append(f"class {node.name}({bases})" if bases else f"class {node.name}")
            out += [_def(f"{node.name}.{f.name}", f, method=True) for f in node.body
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and (not f.name.startswith("_") or f.name.endswith("__"))
                    and f.name != "__init__" and not _attribute(f)]
    return out or None


def _attribute(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A ``@property`` (or its setter): read as ``obj.name``, no method to list as a call."""
    return any(ast.unparse(d) == "property" or ast.unparse(d).endswith((".setter", ".deleter"))
               for d in fn.decorator_list)


def _def(name: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool = False) -> str:
    args = fn.args
    if method and (args.posonlyargs or args.args):
        args = ast.arguments(posonlyargs=args.posonlyargs[1:] if args.posonlyargs else [],
                             args=args.args if args.posonlyargs else args.args[1:],
                             vararg=args.vararg, kwonlyargs=args.kwonlyargs,
                             kw_defaults=args.kw_defaults, kwarg=args.kwarg,
                             defaults=args.defaults)
    returns = f" -> {ast.unparse(fn.returns)}" if fn.returns else ""
    return f"{name}({ast.unparse(args)}){returns}"


def _signatures_in(text: str) -> list[str]:
    """Signatures in backticks, annotated signature lines and Python API listings of code
    blocks, ``class X:`` lines and "a class `X`"; without builtins (``len(cache)``),
    methods of values (``text.split()``) and another signature's parameters."""
    fenced = _FENCED.findall(text)
    listed = [(m, sigs) for m in fenced if (sigs := _python_listing(m)) is not None]
    blocks = "\n".join(b for b in fenced if all(b is not m for m, _ in listed))
    found: list[str] = []
    candidates = [" ".join(c.split()) for c in _BACKTICKED_CALL.findall(text)]  # wrapped
    candidates += [s for s in _SIGNATURE_LINE.findall(blocks) if ":" in s or "->" in s]
    candidates += [f"class {m.group(1)}{m.group(2) or ''}" for m in _CLASS_LINE.finditer(blocks)]
    candidates += [sig for _, sigs in listed for sig in sigs]
    for sig in candidates:
        m = _SIGNATURE.match(sig)
        params = m.group(3) if m and m.group(2) else None
        if params is None or _params(params) is None:
            if sig.startswith("class ") and m:
                found.append(sig)
            continue  # a call with values ("add(1, 2)") or not a signature at all
        sig = sig.removeprefix("def ").strip()
        name = api_name(sig)
        owner, _, member = name.partition(".")
        if (name in BUILTIN_NAMES or (member and not owner[:1].isupper())
                or any(f.split("(")[0] == sig.split("(")[0] for f in found)):
            continue  # the first, fullest form
        found.append(sig)
    params_of = {p for sig in found for p in (_params(sig[sig.find("(") + 1:sig.rfind(")")])
                                              or [])}
    found = [s for s in found if api_name(s) not in params_of or s.startswith("class ")]
    first: dict[str, int] = {}  # where prose first names a class ("a class `X`")
    for at, name in sorted([(m.start(), m.group(1)) for m in _CLASS_NAMED.finditer(text)] + [
            (m.start(), m.group(1) or m.group(2)) for m in _CLASS_PROSE.finditer(text)]):
        first.setdefault(name, at)
    named = [(at, f"class {name}") for name, at in first.items()
             if not any(re.match(rf"(?:class\s+)?{name}\b", f) for f in found)]
    # "`LexError`, a subclass of `ValueError`": a class of this module, with its base
    for m in _SUBCLASS.finditer(text):
        if not any(re.match(rf"(?:class\s+)?{m.group(1)}\b", f) for f in found):
            named = [(at, f) for at, f in named if f != f"class {m.group(1)}"]
            named.append((m.start(), f"class {m.group(1)}({m.group(2)})"))
    # in the order the spec gives them
    placed = [(_position(text, f), f) for f in found]
    return [f for _, f in sorted([*placed, *named], key=lambda p: p[0])]


def _params(sig: str) -> list[str] | None:
    """The parameter names of ``name(a, b: int = 1, *args)`` (None when unparseable)."""
    args = parse_params(sig)
    return None if args is None else [a.arg for a in [*args.posonlyargs, *args.args]]


def _position(text: str, sig: str) -> int:
    """Where the spec gives ``sig`` (a listing's method by its ``def``), for its order."""
    head = sig.split("(")[0]
    member = head.rpartition(".")[2]
    for probe in (f"`{sig}", sig, f"class {head}", f"def {member}(", f"{member}("):
        if (at := text.find(probe)) >= 0:
            return at
    return 0
