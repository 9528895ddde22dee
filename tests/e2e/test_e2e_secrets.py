"""API keys and URL passwords never leave the process, in any encoding.

Real CLI processes talk to a local fake OpenAI-compatible server; afterwards stdout,
stderr (with info logs on), the event log, ``show``/``runs`` and the raw bytes of the
store's files are searched for the secret as is, stripped, repr-escaped, JSON-escaped
and URL-encoded.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from e2e_helpers import CLI_TIMEOUT, REPO, Result, child_env, cli_argv, only_run_id

SPEC = REPO / "agents" / "demo" / "spec.md"
# a key with the characters that make each encoding differ from the raw text
ODD_KEY = 'sk-live/Ab+Cd=Ef"Gh\\Ij42'
URL_PASSWORD = "pw-S3cr3t+Zz/9"


def encodings(secret: str) -> dict[str, str]:
    """The forms a leaked secret would take, written out independently of orchestra."""
    forms = {"raw": secret, "stripped": secret.strip(), "repr": repr(secret)[1:-1],
             "bytes-repr": repr(secret.encode())[2:-1], "json": json.dumps(secret)[1:-1],
             "url": quote(secret, safe=""), "url-plus": quote_plus(secret)}
    return {name: form for name, form in forms.items() if len(form) >= 6}


class _FakeOpenAI(BaseHTTPRequestHandler):
    """Refuses every call with a 401 whose message echoes the credentials it got, in
    several encodings (as some gateways do)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        auth = self.headers.get("authorization") or ""
        key = auth.removeprefix("Bearer ")
        message = (f"invalid key {key} (repr {key!r}, url {quote(key, safe='')}, "
                   f"form {quote_plus(key)})")
        body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@dataclass
class Case:
    secret: str
    model: str  # "{port}" is filled in
    env: dict[str, str]
    exit_code: int
    says: str  # what stderr must say


CASES = {
    "key-ending-in-CR": Case("sk-crlf-Secret-0123456789\r", "openai-compatible:"
                             "http://127.0.0.1:{port}/v1#m",
                             {"OPENAI_COMPATIBLE_API_KEY": "sk-crlf-Secret-0123456789\r"}, 2,
                             "$OPENAI_COMPATIBLE_API_KEY contains a control character"),
    "key-echoed-by-the-server": Case(ODD_KEY, "openai-compatible:http://127.0.0.1:{port}/v1#m",
                                     {"OPENAI_COMPATIBLE_API_KEY": ODD_KEY}, 1,
                                     "the server refused the API key"),
    "password-in-the-model-url": Case(
        URL_PASSWORD, f"openai-compatible:http://alice:{quote(URL_PASSWORD, safe='')}"
        "@127.0.0.1:{port}/v1#m", {}, 1, "http://alice:***@127.0.0.1"),
}


def _cli(*args: str | Path, env: dict[str, str]) -> Result:
    proc = subprocess.run(cli_argv(*args), env={**child_env(), **env}, capture_output=True,
                          text=True, timeout=CLI_TIMEOUT)
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.parametrize("name", list(CASES))
def test_a_secret_leaks_nowhere(name: str, server: int, tmp_path: Path) -> None:
    case = CASES[name]
    env = {**case.env, "ORCHESTRA_LOG": "info"}
    db = tmp_path / "s.db"
    (tmp_path / "ws").mkdir()
    model = case.model.replace("{port}", str(server))
    res = _cli("run", "--spec", SPEC, "--workspace", tmp_path / "ws", "--db", db,
               "--model", model, "--max-rounds", "1", env=env)
    assert res.code == case.exit_code, res
    assert case.says in res.stdout + res.stderr, res
    assert "Traceback" not in res.stderr, res
    outputs = {"run stdout": res.stdout, "run stderr and log": res.stderr}
    if db.exists():
        run_id = only_run_id(db)
        for command in (["events", run_id], ["show", run_id], ["runs"]):
            shown = _cli(*command, "--db", db, "--json", env=env)
            assert shown.code == 0, shown
            outputs[" ".join(command[:1])] = shown.stdout + shown.stderr
        assert "run.failed" in outputs["events"]
        stored = b"".join(p.read_bytes() for p in tmp_path.glob("s.db*"))
    else:
        assert case.exit_code == 2  # refused before anything was written
        stored = b""
    for form_name, form in encodings(case.secret).items():
        for where, text in outputs.items():
            assert form not in text, f"the {form_name} form of the secret is in {where}"
        assert form.encode() not in stored, f"the {form_name} form of the secret is in the store"


PLAN = json.dumps({
    "modules": [{"path": "textkit/slugify.py", "purpose": "slugs, with none of the accents",
                 "public_api": ['slugify(text: str, sep: str = "-") -> str'],
                 "test_path": "tests/test_slugify.py", "uses": []}],
    "decisions": [{"decision": "no third-party packages", "reason": "there are none needed"}]})


class _NoKeyServer(BaseHTTPRequestHandler):
    """A local server that needs no key: the architect gets a plan (streamed when asked),
    every later call a refusal, so the run fails soon after its plan is on the board."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        if not body["messages"][0]["content"].startswith("You are the architect"):
            self._send(401, "application/json", json.dumps({"error": {
                "message": "no more answers here", "type": "invalid_request_error"}}))
            return
        if not body.get("stream"):
            self._send(200, "application/json", json.dumps({
                "id": "c1", "object": "chat.completion", "model": "m", "choices": [{
                    "index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": PLAN}}]}))
            return
        cut = PLAN.index("none") + 2  # the word "none" split across two deltas
        chunks: list[dict[str, object]] = [
            {"choices": [{"index": 0, "delta": {"content": part}, "finish_reason": None}]}
            for part in (PLAN[:cut], PLAN[cut:])]
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        self._send(200, "text/event-stream", "".join(
            f"data: {json.dumps({'id': 'c1', 'model': 'm', **c})}\n\n" for c in chunks)
            + "data: [DONE]\n\n")

    def _send(self, status: int, kind: str, text: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(text.encode())))
        self.end_headers()
        self.wfile.write(text.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("placeholder", ["none", "EMPTY", "sk-no-key-required"])
def test_a_no_key_placeholder_masks_no_word_the_cli_prints(placeholder: str,
                                                           tmp_path: Path) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _NoKeyServer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        env = {"OPENAI_COMPATIBLE_API_KEY": placeholder}
        db = tmp_path / "s.db"
        model = f"openai-compatible:http://127.0.0.1:{httpd.server_address[1]}/v1#m"
        res = _cli("run", "--spec", SPEC, "--workspace", tmp_path / "ws", "--db", db,
                   "--model", model, "--max-rounds", "1", env=env)
        events = _cli("events", only_run_id(db), "--db", db, env=env)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert res.code == 1, res
    assert "approved: none" in res.stdout, res
    assert "slugs, with none of" in events.stdout, events  # the model's streamed text
    assert "***" not in res.stdout + res.stderr + events.stdout, (res, events)
