"""One reading of a spec, made where the plan is routed (issue 46)."""

from __future__ import annotations

from test_plans import MODULES, SPEC

from agents.specfacts import read_spec
from agents.specread import SpecCase


def test_the_facts_of_the_eight_module_brief() -> None:
    facts = read_spec(SPEC + "\n`tokenize(\"a b\") == [\"a\", \"b\"]`\n")
    modules = [f"textkit/{n}.py" for n, _, _ in MODULES]
    uses = facts.uses(modules)
    assert uses["textkit/tfidf.py"] == ["textkit/normalize.py", "textkit/stopwords.py"]
    assert uses["textkit/tokens.py"] == []
    others = [m for m in modules if m != "textkit/stem.py"]
    assert facts.signatures("textkit/stem.py", others) == ["stem(word: str) -> str"]
    stated = facts.stated("textkit/summary.py", [MODULES[7][1]])
    assert stated.cases == [] and "summarize" in stated.section
    tokens = facts.stated("textkit/tokens.py", [MODULES[0][1]])
    assert tokens.cases == []  # the example sits in the last module's part
    last = facts.stated("textkit/summary.py", [MODULES[0][1]])
    assert last.cases == [SpecCase("tokenize('a b')", "['a', 'b']")]
