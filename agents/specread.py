"""The small readers every spec parser shares: a module's API as data, literals found in
running text, and whether a value fits a stated type. Each reads one thing and says
nothing when unsure.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from agents.checks import parsed, parsed_expr

__all__ = ["Api", "Function", "SpecCase", "api_name", "call_source", "calls_in", "fits",
           "free_names", "import_names", "literal", "literal_prefix", "parse_params", "read_api",
           "stated_result"]


@dataclass(frozen=True, slots=True)
class SpecCase:
    """One stated example: ``call`` (Python source) equals ``expected`` (source) or raises
    ``error``, after the ``setup`` statements the example gives before it (its state)."""

    call: str
    expected: str | None = None
    error: str | None = None
    setup: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Function:
    """A module-level function of the API: its (name, annotation, has a default) params."""

    name: str
    params: tuple[tuple[str, str | None, bool], ...]
    returns: str | None = None

    @property
    def required(self) -> list[str]:
        return [p for p, _, default in self.params if not default]

    def annotation(self, param: str) -> str | None:
        return next((a for p, a, _ in self.params if p == param), None)


@dataclass(frozen=True, slots=True)
class Api:
    """What a module offers by the spec and the plan: functions, classes, method names."""

    functions: dict[str, Function]
    classes: frozenset[str]
    methods: frozenset[str]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.functions) | self.classes


_ENTRY = re.compile(r"^\s*(?:(class)\s+|def\s+)?([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?\s*"
                    r"(?:\((.*)\))?\s*(?:->\s*(.+?))?\s*:?\s*$")


def api_name(sig: str) -> str:
    """The name an API entry gives: ``X.m`` for ``X.m(a)``, ``X`` for ``class X(Base)``."""
    return sig.split("(")[0].removeprefix("class ").strip()


def parse_params(params: str) -> ast.arguments | None:
    """The parameters ``a, b: int = 1, *args`` as Python reads them (None: not Python)."""
    tree = parsed(f"def _f({params}): pass")
    fn = tree.body[0] if tree else None
    return fn.args if isinstance(fn, ast.FunctionDef) else None


def read_api(entries: Sequence[str]) -> Api:
    """The API of signatures such as ``f(a: int) -> str``, ``class X``, ``X.put(key)``; a
    lower-case name listed after a (non-exception) constructor is that class's method,
    so no sentence can be a test of it alone."""
    functions: dict[str, Function] = {}
    classes: set[str] = set()
    methods: set[str] = set()
    owner: str | None = None
    for entry in entries:
        m = _ENTRY.match(str(entry))
        if not m:
            continue
        is_class, name, member, params, returns = m.groups()
        if is_class or name[:1].isupper():
            classes.add(name)
            bases = params or ""
            exception = name.endswith(("Error", "Exception")) or bool(
                re.search(r"(Error|Exception)\b", bases))
            # "X(capacity)" then "put(key)": X's method; after "class X" or "X.m(...)" a
            # bare name is a function (a listing's methods come as "X.m")
            owner = None if exception or is_class or params is None or member else name
            if member:
                methods.add(member)
            continue
        args = parse_params(params) if params is not None else None
        if owner is not None or name.startswith("__") or (args is not None and args.args[:1]
                                                           and args.args[0].arg == "self"):
            methods.add(name)
            continue
        if args is None or name in functions:
            continue
        every = [*args.posonlyargs, *args.args]
        first_default = len(every) - len(args.defaults)
        functions[name] = Function(name, tuple(
            (a.arg, ast.unparse(a.annotation) if a.annotation else None, i >= first_default)
            for i, a in enumerate(every)), returns.strip() if returns else None)
    return Api(functions, frozenset(classes), frozenset(methods))


def import_names(entries: Sequence[str]) -> list[str]:
    """The module-level names an API offers, each once, in order: what a module built on
    it imports (``Point.translated(dx)`` gives ``Point``; a method alone gives nothing)."""
    api = read_api(entries)
    names: list[str] = []
    for entry in entries:
        m = _ENTRY.match(str(entry))
        if not m:
            continue
        is_class, name, member = m.groups()[:3]
        if (is_class or member or name[:1].isupper() or name in api.functions
                or name not in api.methods) and name not in names:
            names.append(name)
    return names


def literal(text: str) -> str | None:
    """``text`` as Python source if it is a literal (``"IV"``, ``[("a", 1)]``, ``-1``)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
        ast.literal_eval(tree)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    return ast.unparse(tree)


def _code(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """Each character of ``text`` from ``start`` that is not inside a string literal (a
    closing quote is outside), as (index, character, bracket depth after it)."""
    depth, quote, i = 0, "", start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if not quote:
            yield i, c, depth
        i += 1


def _ends(text: str) -> Iterator[int]:
    """Positions in ``text`` after which a value may end: outside strings, brackets closed,
    before whitespace, a comma, a backtick or the end (a '.' or ':' only before a space)."""
    for i, c, depth in _code(text):
        if depth < 0:
            return
        if depth == 0 and c not in ",. \t\n":  # "1, and" is 1, not (1,)
            nxt = text[i + 1:i + 3]
            if (not nxt or nxt[0] in " \t\n,;`)|" or (nxt[0] in ".:" and (
                    len(nxt) == 1 or nxt[1] in " \t\n"))):
                yield i + 1


def literal_prefix(text: str, limit: int = 600) -> tuple[str, int] | None:
    """The longest literal ``text`` starts with, as (source, length), or None."""
    best = None
    lead = len(text) - len(text.lstrip(" \t"))
    body = text[lead:limit]
    for end in _ends(body):
        value = literal(body[:end])
        if value is not None:
            best = (value, lead + end)
    return best


def _close(text: str, start: int) -> int:
    """The index of the ``)`` closing the ``(`` at ``start`` (-1 when none)."""
    for i, c, depth in _code(text, start):
        if depth == 0 and c in ")]}":
            return i if c == ")" else -1
    return -1


def call_source(text: str, functions: Sequence[str]) -> str | None:
    """``text`` as source if it calls one of ``functions`` with literal arguments."""
    if (node := parsed_expr(text.strip())) is None:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in functions):
        return None
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords):
        return None
    try:
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            ast.literal_eval(arg)
    except ValueError:
        return None
    return ast.unparse(node)


def calls_in(text: str, functions: Sequence[str]) -> Iterator[tuple[str, int, int]]:
    """Each call of one of ``functions`` with literal arguments, as (source, start, end)."""
    if not functions:
        return
    names = "|".join(re.escape(f) for f in functions)
    for m in re.finditer(rf"(?<![\w.])({names})\s*\(", text):
        close = _close(text, m.end() - 1)
        if close < 0:
            continue
        source = call_source(text[m.start():close + 1], functions)
        if source is not None:
            yield source, m.start(), close + 1


_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "bytes": (bytes,),
    "list": (list,), "List": (list,), "Sequence": (list, tuple), "tuple": (tuple,),
    "Tuple": (tuple,), "dict": (dict,), "Dict": (dict,), "Mapping": (dict,), "set": (set,),
    "Set": (set,), "frozenset": (set, frozenset), "None": (type(None),),
}


def _allowed(node: ast.expr) -> tuple[type, ...] | None:
    """The Python types an annotation admits (None: anything, or unknown)."""
    if isinstance(node, ast.Constant) and node.value is None:
        return (type(None),)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _allowed(node.left), _allowed(node.right)
        return None if left is None or right is None else left + right
    base = node.value if isinstance(node, ast.Subscript) else node
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
    if isinstance(node, ast.Subscript) and name == "Optional":
        inner = _allowed(node.slice)
        return None if inner is None else (*inner, type(None))
    if isinstance(node, ast.Subscript) and name == "Union" and isinstance(node.slice, ast.Tuple):
        parts = [_allowed(e) for e in node.slice.elts]
        return None if any(p is None for p in parts) else tuple(
            t for p in parts if p for t in p)
    return _TYPES.get(name)


def fits(value_source: str, annotation: str | None) -> bool:
    """Whether a literal may be a value of ``annotation`` (unknown annotations admit all)."""
    if not annotation:
        return True
    try:
        allowed = _allowed(ast.parse(annotation, mode="eval").body)
        value = ast.literal_eval(value_source)
    except (SyntaxError, ValueError):
        return True
    if allowed is None:
        return True
    if isinstance(value, bool) and bool not in allowed:
        return False
    return isinstance(value, allowed)


ERROR_NAME = r"([A-Z]\w*(?:Error|Exception))"
_ALTERNATIVE = re.compile(r"^\W{0,3}\s*or\b")
# what may follow a stated value: punctuation, a dash, the line's end, "and"/"but"
_AFTER_VALUE = re.compile("[ \t]*(?:[,;:.()\\]`\u2013\u2014-]|\n|(?:and|but|while|whereas)\\b)")


def stated_result(text: str, returns: str | None) -> tuple[str | None, str | None]:
    """A result as a comment or a cell says it: ``raises E``, a literal with no "or", or none."""
    text = text.strip()
    raised = re.match(r"(?:raises?|throws?)?\s*:?\s*`?" + ERROR_NAME + r"`?(?:\W|$)", text)
    if raised and (text.lower().startswith(("raise", "throw")) or raised.end() >= len(text)):
        return None, raised.group(1)
    text = re.sub(r"^(?:->|→|=>|==|returns?|gives?|is)\s+", "", text)
    found = literal_prefix(text)
    if found is None:
        return None, None
    value, end = found
    rest = text[end:]
    if _ALTERNATIVE.match(rest) or (rest.strip() and not _AFTER_VALUE.match(rest)):
        return None, None
    return (value, None) if fits(value, returns) else (None, None)


BUILTIN_NAMES = frozenset(dir(builtins))
STDLIB = frozenset(sys.stdlib_module_names)


def free_names(case: SpecCase) -> set[str]:
    """The names a case reads that neither it nor the builtins define."""
    trees = [ast.parse(s) for s in (*case.setup, case.call, case.expected or "None")]
    bound = {n.id for t in trees for n in ast.walk(t) if isinstance(n, ast.Name)
             and not isinstance(n.ctx, ast.Load)} | {
        a.arg for t in trees for a in ast.walk(t) if isinstance(a, ast.arg)}
    used = {n.id for t in trees for n in ast.walk(t) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}
    return used - bound - BUILTIN_NAMES
