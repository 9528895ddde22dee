"""The redaction mechanism: every encoding of a secret is masked, URL passwords too,
and a key holding a control character is refused where it is loaded."""

from __future__ import annotations

import json
from urllib.parse import quote, quote_plus

import pytest

from orchestra import UserError
from orchestra._secrets import Secrets, can_be_secret, check_key, mask_url, redact, url_secrets
from orchestra.models.spec import parse_model_spec

KEY = 'sk-A/b+C=d"e\\f\r'


@pytest.mark.parametrize("form", [
    KEY, KEY.strip(), repr(KEY)[1:-1], repr(KEY.encode())[2:-1], json.dumps(KEY)[1:-1],
    quote(KEY, safe=""), quote_plus(KEY), json.dumps(repr(KEY))[1:-1]])
def test_every_encoding_is_masked(form: str) -> None:
    secrets = Secrets()
    secrets.add(KEY)
    masked = secrets.redact(f"before {form} after")
    assert masked.startswith("before ") and masked.endswith(" after")
    assert "sk-A" not in masked and "***" in masked


def test_short_values_are_not_secrets() -> None:
    secrets = Secrets()
    secrets.add("abc", None, "")
    assert not secrets and secrets.redact("abc") == "abc"


PRINTED = ("approved: none\nsandbox=none\n(there are none) EMPTY test dir; ollama said "
           "sk-no-key-required is not-needed, placeholder, changeme")


@pytest.mark.parametrize("placeholder", [
    "none", "None", "EMPTY", "sk-no-key-required", "not-needed", "placeholder", "ollama",
    "changeme", "dummy", " none\r", "no-key", "password", "Anything"])
def test_a_no_key_placeholder_masks_no_word(placeholder: str) -> None:
    secrets = Secrets()
    secrets.add(placeholder, KEY)
    assert not can_be_secret(placeholder)
    assert secrets.redact(PRINTED) == PRINTED
    assert secrets.redact(f"approved: none, key {KEY}") == "approved: none, key ***"
    assert redact(PRINTED, [placeholder]) == PRINTED


@pytest.mark.parametrize("key", [
    "sk-proj-4f9Qm2LxT7", "hunter22", "AbCdEfGhIjKl", "correcthorsebatterystaple",
    "gsk_live_00a1b2c3", "p/ss-w0rd", "sk-ant-api03-" + "x" * 40])
def test_a_real_key_is_still_masked_everywhere(key: str) -> None:
    secrets = Secrets()
    secrets.add("none", key)
    assert can_be_secret(key)
    out = secrets.redact(f"approved: none; sent {key}; json {json.dumps(key)}")
    assert key not in out and out.startswith("approved: none; sent ***"), out


@pytest.mark.parametrize("value", ["sk-good\r", "sk-\x00bad", "sk-bad\n", "\tsk-bad"])
def test_a_key_with_a_control_character_is_refused_naming_its_source(value: str) -> None:
    with pytest.raises(UserError, match=r"\$OPENAI_API_KEY contains a control character") as err:
        check_key(value, "$OPENAI_API_KEY")
    assert "sk-" not in str(err.value)


def test_openai_model_refuses_a_crlf_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestra.models.openai import OpenAIModel

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-a-crlf-env-file\r")
    with pytest.raises(UserError, match=r"\$OPENAI_API_KEY .*Windows line endings") as err:
        OpenAIModel("gpt-4.1-mini")
    assert "sk-from" not in str(err.value)


def test_url_credentials() -> None:
    url = "http://alice:p%2Fss-w0rd@127.0.0.1:8080/v1"
    assert url_secrets(url) == ("p%2Fss-w0rd", "p/ss-w0rd")
    assert mask_url(url) == "http://alice:***@127.0.0.1:8080/v1"
    assert mask_url("https://tok-123456@h/v1") == "https://***@h/v1"
    assert mask_url("http://h:1/v1") == "http://h:1/v1"
    spec = parse_model_spec(f"openai-compatible:{url}#m")
    assert str(spec) == "openai-compatible:http://alice:***@127.0.0.1:8080/v1#m"
    assert spec.base_url == url  # the adapter still gets the credentials


def test_a_recorded_spec_with_masked_credentials_asks_for_the_model_again() -> None:
    with pytest.raises(UserError, match=r"credentials were masked .* pass the model again"):
        parse_model_spec("openai-compatible:http://alice:***@127.0.0.1:8080/v1#m")
