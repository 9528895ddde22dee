"""Schema v10 (issue 49): the claim functions filter on the versions the claimer serves.

v9 gave each run a ``version``; a worker's look for work named the versions it serves,
but the claims themselves took any run's task. Now ``orchestra_claim_take`` takes a last
argument, ``c_versions`` (``versions.served``: the served versions and ``''``; NULL: any
run), and takes only tasks of runs on one of them, inside the same statement: the join
with ``runs`` is there already (for the run's status), so the filter costs no round trip
and no other plan. ``orchestra_claim`` and ``orchestra_step`` pass it through. Each is
v6's function with that one change, so the script is derived from v6's text (checked
replacements: a change v6 no longer matches fails at import, not at migration).
"""

from __future__ import annotations

from orchestra.store.postgres.step_sql_v6 import V6


def _part(start: str, end: str) -> str:
    return V6[V6.index(start):V6.index(end)]


def _sub(text: str, old: str, new: str, count: int = 1) -> str:
    if text.count(old) != count:
        raise AssertionError(f"v6 no longer holds {count} of {old!r}")
    return text.replace(old, new)


_TAKE = _sub(_sub(
    _part("CREATE FUNCTION orchestra_claim_take", "CREATE OR REPLACE FUNCTION orchestra_claim("),
    "p_now double precision, p_expired boolean)",
    "p_now double precision, p_expired boolean,\n                                     "
    "c_versions text[])"),
    "AND (c_run IS NULL OR tk.run_id = c_run) AND tk.role = ANY(v_roles)",
    "AND (c_run IS NULL OR tk.run_id = c_run) AND tk.role = ANY(v_roles)\n"
    "                      AND (c_versions IS NULL OR ru.version = ANY(c_versions))", 2)
_CLAIM = _sub(_sub(
    _part("CREATE OR REPLACE FUNCTION orchestra_claim(",
          "CREATE OR REPLACE FUNCTION orchestra_step("),
    "p_now double precision) RETURNS SETOF tasks",
    "p_now double precision,\n                                           "
    "c_versions text[]) RETURNS SETOF tasks"),
    "c_lease, p_now, true)", "c_lease, p_now, true, c_versions)")
_STEP = _sub(_sub(
    _part("CREATE OR REPLACE FUNCTION orchestra_step(", "-- ``runs.set_run_status``"),
    "c_lease double precision) RETURNS SETOF tasks",
    "c_lease double precision, c_versions text[]) RETURNS SETOF tasks"),
    "c_lease, v_now, false)", "c_lease, v_now, false, c_versions)")

V10 = """
DROP FUNCTION orchestra_step(text, text, integer, text, text, integer, integer, text, text,
    text, text, bigint, bigint, double precision, text, text[], text[], text[], text[],
    text[], text[], text[], text[], text[], integer[], text[], text[], boolean, text, text,
    text[], integer[], integer, text, double precision);
DROP FUNCTION orchestra_claim(text, text[], integer[], integer, text, double precision,
                              double precision);
DROP FUNCTION orchestra_claim_take(text, text[], integer[], integer, text, double precision,
                                   double precision, boolean);
""" + _TAKE + _CLAIM + _STEP
