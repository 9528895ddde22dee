"""The imports a small model forgot, added back (``pytest.raises`` without ``import
pytest`` failed a 1.5B tester's error tests against any module). Only a name used, bound
nowhere and with one possible home is imported: the import can only be what was meant.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from agents.checks import DEFINITIONS, defines, parsed

__all__ = ["absolute_imports", "add_missing_imports", "usable_prefix"]

_KNOWN = frozenset(sys.stdlib_module_names) | {"pytest"}
# names with one home in the standard library, which a small model uses without importing
_HOMES = {**dict.fromkeys(("Any", "Callable", "Optional", "Union", "List", "Dict", "Tuple",
                           "Set", "FrozenSet", "Iterable", "Iterator", "Sequence", "Mapping",
                           "Hashable", "NamedTuple", "TypeVar", "Generic", "Literal",
                           "DefaultDict", "Deque", "Protocol", "TypedDict", "ClassVar",
                           "Final", "NoReturn", "Type", "Generator", "Awaitable", "cast",
                           "overload", "MutableMapping", "MutableSequence", "MutableSet",
                           "TextIO", "IO"), "typing"),
          **dict.fromkeys(("OrderedDict", "defaultdict", "deque", "Counter", "namedtuple",
                           "ChainMap"), "collections"),
          **dict.fromkeys(("dataclass", "field", "asdict", "astuple"), "dataclasses"),
          **dict.fromkeys(("reduce", "lru_cache", "total_ordering", "cmp_to_key",
                           "partial", "wraps", "cached_property", "singledispatch"),
                          "functools"),
          **dict.fromkeys(("chain", "groupby", "islice", "zip_longest", "accumulate",
                           "permutations", "combinations", "combinations_with_replacement",
                           "product", "starmap", "takewhile", "dropwhile", "pairwise"),
                          "itertools"),
          **dict.fromkeys(("heappush", "heappop", "heapify", "heapreplace", "heappushpop",
                           "nlargest", "nsmallest"), "heapq"),
          **dict.fromkeys(("bisect_left", "bisect_right", "insort", "insort_left",
                           "insort_right"), "bisect"),
          **dict.fromkeys(("sqrt", "floor", "ceil", "gcd", "lcm", "isqrt", "isclose", "prod",
                           "factorial", "comb", "inf", "pi"), "math"),
          **dict.fromkeys(("itemgetter", "attrgetter"), "operator"),
          **dict.fromkeys(("Enum", "IntEnum", "Flag", "IntFlag", "auto"), "enum"),
          **dict.fromkeys(("ABC", "abstractmethod"), "abc"),
          **dict.fromkeys(("monotonic", "perf_counter", "sleep"), "time"),
          **dict.fromkeys(("ascii_lowercase", "ascii_uppercase", "ascii_letters",
                           "punctuation", "hexdigits"), "string"),
          **dict.fromkeys(("contextmanager", "suppress"), "contextlib"),
          "Decimal": "decimal", "Fraction": "fractions", "Path": "pathlib",
          "deepcopy": "copy", "timedelta": "datetime", "StringIO": "io",
          "dedent": "textwrap"}


def _bound(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, DEFINITIONS):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out |= set(node.names)
    return out


def add_missing_imports(text: str, project: Mapping[str, str] | None = None) -> str:
    """``text`` with ``import X`` for each standard module (or pytest) it uses unimported,
    ``from M import f`` for each name of the project's modules (``project``: name ->
    dotted module) or with one home in the standard library it uses undefined."""
    if (tree := parsed(text)) is None:
        return text
    bound = _bound(tree) | set(dir(builtins))
    used = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and isinstance(n.value.ctx, ast.Load)}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Load)} - bound
    theirs = project or {}
    missing = [f"import {m}" for m in sorted(used - bound & _KNOWN)] + [
        f"from {theirs[n]} import {n}" for n in sorted(names & set(theirs))] + [
        f"from {_HOMES[n]} import {n}" for n in sorted(names & set(_HOMES) - set(theirs))]
    if not missing:
        return text
    lines = text.split("\n")
    at = 0  # after a docstring and `from __future__` imports, which must come first
    for node in tree.body:
        is_doc = (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                  and isinstance(node.value.value, str) and node is tree.body[0])
        if is_doc or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            at = node.end_lineno or at
        else:
            break
    return "\n".join([*lines[:at], *missing, *lines[at:]])


def absolute_imports(text: str, path: str, modules: Sequence[str] = ()) -> str:
    """``text`` (the module at ``path``) with its imports of the project's modules written
    as its users import it: a top-level module's ``from .tokens import t`` (no parent
    package) becomes ``from tokens import t``; in a package ``calc/``, ``from tokens
    import t`` becomes ``from calc.tokens import t``."""
    if (tree := parsed(text)) is None:
        return text
    parts = PurePosixPath(path).with_suffix("").parts
    package = parts[:-1]
    stems = {PurePosixPath(m).with_suffix("").parts for m in modules}
    lines = text.split("\n")
    changes: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.end_lineno is None:
            continue
        new: ast.ImportFrom | ast.Import | None = None
        if node.level == 1 and not package:
            new = (ast.ImportFrom(node.module, node.names, 0) if node.module
                   else ast.Import(node.names))
        elif (node.level == 0 and package and node.module
              and (*package, *node.module.split(".")) in stems
              and tuple(node.module.split(".")) not in stems):
            new = ast.ImportFrom(".".join((*package, node.module)), node.names, 0)
        if new is not None:
            indent = lines[node.lineno - 1][:node.col_offset]
            changes.append((node.lineno, node.end_lineno, indent + ast.unparse(new)))
    for start, end, line in sorted(changes, reverse=True):
        lines[start - 1:end] = [line]
    return "\n".join(lines)


_TOP_STATEMENT = re.compile(r"(?:def|class|async|import|from|if|@|[A-Za-z_]\w*\s*[=:(])")


def usable_prefix(text: str) -> str | None:
    """The longest run of ``text``'s top-level statements, from its start, that parses and
    defines a function or class, when the whole does not parse (a good module followed by
    broken tests); None otherwise."""
    try:
        ast.parse(text)
        return None
    except SyntaxError as exc:
        bad = (exc.lineno or 1) - 1
    lines = text.split("\n")
    for end in range(min(bad, len(lines) - 1), 0, -1):
        if not _TOP_STATEMENT.match(lines[end]):
            continue
        prefix = "\n".join(lines[:end]).rstrip() + "\n"
        if defines(prefix):
            return prefix
    return None
