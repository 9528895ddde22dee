"""Ids drawn from a pool of ``os.urandom`` bytes: unique across threads and a fork, and
payloads encoded by the one C encoder exactly as ``json`` would, with clear errors."""

from __future__ import annotations

import json
import os
import threading

import pytest

from orchestra._errors import UserError
from orchestra.store.codec import Encoder, compact, new_id


def test_ids_are_unique_across_threads_and_many_pool_refills() -> None:
    ids: list[str] = []

    def draw() -> None:
        ids.extend(new_id() for _ in range(3000))  # 8 bytes each: several 4 KiB draws

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == len(set(ids)) == 12000
    assert all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
    assert len(new_id(12)) == 12 and len(new_id(7)) == 7


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    new_id()  # the pool holds bytes the child would otherwise hand out again
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        os.close(read)
        os.write(write, " ".join(new_id() for _ in range(8)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split())
    os.waitpid(pid, 0)
    parent = {new_id() for _ in range(8)}
    assert len(child) == 8 and not child & parent


def test_payloads_encode_as_json_does_compactly() -> None:
    value = {"a": [1, 2.5, None, True, 'é"\n'], "b": {"c": -0.0, "d": 10**20}}
    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert Encoder(1 << 20).json(value, "x") == expected == compact(value)
    assert compact("plain") == '"plain"' and compact([["k", '{"a":1}']]) == '[["k","{\\"a\\":1}"]]'


@pytest.mark.parametrize(("value", "why"), [
    ({"x": float("nan")}, "Out of range float"),
    ({"x": object()}, "Object of type object"),
    ({(1, 2): 3}, "keys must be"),
])
def test_an_unencodable_payload_names_its_field_and_why(value: object, why: str) -> None:
    with pytest.raises(UserError, match=f"handoff payload is not JSON-serializable: {why}"):
        Encoder(1 << 20).json(value, "handoff payload")  # type: ignore[arg-type]


def test_a_payload_that_contains_itself_is_refused_clearly() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(UserError, match="contains itself, or is nested too deep"):
        Encoder(1 << 20).json(loop, "task input")  # type: ignore[arg-type]
