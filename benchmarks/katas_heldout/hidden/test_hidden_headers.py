import pytest
from headers import HeaderError, format_headers, parse_headers


def test_parse_crlf_example_stops_at_body():
    block = "Host: example.org\r\nAccept: text/html\r\naccept: */*\r\n\r\nbody: x\r\n"
    assert parse_headers(block) == {"host": "example.org", "accept": "text/html, */*"}


def test_parse_values_stripped_and_colons_kept():
    assert parse_headers("Host:  a:8080 \t\nX-Empty:\nDate:\tMon") == {
        "host": "a:8080", "x-empty": "", "date": "Mon"}


def test_parse_empty_blocks():
    assert parse_headers("") == {}
    assert parse_headers("\r\nHost: x\r\n") == {}


def test_parse_continuation_lines():
    assert parse_headers("Subject: a very\n  long subject\nTo: x@y.z\n") == {
        "subject": "a very long subject", "to": "x@y.z"}
    assert parse_headers("A: 1\n\t2 \n 3\nB: 4") == {"a": "1 2 3", "b": "4"}


def test_parse_repeated_names_and_order():
    result = parse_headers("B: 1\nA: 2\nb: 3\nB: 4\n")
    assert result == {"b": "1, 3, 4", "a": "2"}
    assert list(result) == ["b", "a"]


def test_parse_errors():
    for bad in ["no colon here", ": empty name", "Bad Name: x", "Bad\tName: x",
                "  starts indented", "Host: x\nwhat"]:
        with pytest.raises(HeaderError):
            parse_headers(bad)
    assert issubclass(HeaderError, ValueError)


def test_format_example():
    assert format_headers({"content-type": "text/plain", "x-trace": "1"}) == (
        "Content-Type: text/plain\r\nX-Trace: 1\r\n\r\n")


def test_format_canonical_names_and_empty():
    assert format_headers({}) == "\r\n"
    assert format_headers({"content-TYPE": "a", "x-request-id": "b", "ETAG": "c"}) == (
        "Content-Type: a\r\nX-Request-Id: b\r\nEtag: c\r\n\r\n")


def test_format_rejects_line_breaks():
    for bad in ["a\nb", "a\rb", "a\r\n"]:
        with pytest.raises(HeaderError):
            format_headers({"x": bad})


def test_round_trip():
    headers = {"host": "example.org", "x-list": "a, b", "empty": ""}
    assert parse_headers(format_headers(headers)) == headers
