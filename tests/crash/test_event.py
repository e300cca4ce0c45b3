"""A real sentry-sdk's envelope read into a crash: the traceback a job takes (parsed back by intake, frames,
chained causes, local variables), its group, its secrets redacted; and what is refused before any of it."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from patcher.crash import (
    BadEvent,
    CrashLimits,
    EventTooLarge,
    Scrubber,
    decoded,
    event_of_envelope,
    read_crash,
    sentry_key,
    traceback_text,
)
from patcher.intake import map_frames, parse_traceback
from tests.support.crashes import KEY, captured, shop_repo


@pytest.fixture(scope="module")
def sent(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str], bytes, Path]:
    """What the application's sentry-sdk sent for the shop's last-page crash: (path, headers, body, repo)."""
    repo, _ = shop_repo(tmp_path_factory.mktemp("app") / "shop")
    return (*captured(repo, "shop@1.4.2"), repo)


def crash_of(sent: tuple[str, dict[str, str], bytes, Path]) -> Any:
    _, headers, body, _ = sent
    event_id, event = event_of_envelope(decoded(body, headers.get("Content-Encoding"), 1_000_000))
    assert event is not None and event_id is not None
    return read_crash(event, event_id, CrashLimits(), Scrubber())


def test_the_sdk_request_names_its_project_and_key(sent: tuple[str, dict[str, str], bytes, Path]) -> None:
    path, headers, _, _ = sent
    assert path == "/api/1/envelope/"
    assert sentry_key(headers["X-Sentry-Auth"], None) == KEY
    assert sentry_key(None, KEY) == KEY and sentry_key("Bearer x", None) is None


def test_the_crash_becomes_a_traceback_intake_parses_and_maps_onto_the_repository(
        sent: tuple[str, dict[str, str], bytes, Path]) -> None:
    crash = crash_of(sent)
    assert crash.release == "shop@1.4.2" and crash.title == "IndexError: list index out of range"
    text = traceback_text(crash)
    parsed = parse_traceback(text)
    assert parsed.exception is not None and parsed.exception.type == "IndexError"
    files = ["shop/__init__.py", "shop/api.py", "shop/pagination.py", "tests/test_pagination.py"]
    mapped = map_frames(parsed, files)
    inside = [(f.repo_path, f.function) for f in mapped.frames if not f.external]
    assert ("shop/api.py", "list_products") in inside and inside[-1][0] == "shop/pagination.py", text
    crash_frame = next(f for f in mapped.frames if f.function == "page")
    assert dict(crash_frame.locals)["number"] == "3" and dict(crash_frame.locals)["size"] == "10", text
    assert crash_frame.source is not None and "range(start, min(end, len(items) + 1))" in crash_frame.source


def test_the_python_the_application_ran_leads_the_traceback_and_is_the_jobs_first_choice(
        sent: tuple[str, dict[str, str], bytes, Path]) -> None:
    """The sdk's stdlib integration reports the runtime (`contexts.runtime`; the captured event was sent without
    it): the job runs the crash on that Python first."""
    import sys

    from sentry_sdk.integrations.stdlib import _RUNTIME_CONTEXT

    from patcher.env import crash_python

    _, headers, body, _ = sent
    event_id, event = event_of_envelope(decoded(body, headers.get("Content-Encoding"), 1_000_000))
    assert event is not None and event_id is not None
    event["contexts"]["runtime"] = dict(_RUNTIME_CONTEXT)
    crash = read_crash(event, event_id, CrashLimits(), Scrubber())
    assert crash is not None
    version = ".".join(map(str, sys.version_info[:3]))  # the sdk's context is this very interpreter's
    assert crash.runtime == f"CPython {version}"
    text = traceback_text(crash)
    assert text.startswith(f"Python {version} (CPython, the crash report's runtime)\n\nTraceback ")
    assert crash_python(text) == (".".join(map(str, sys.version_info[:2])), "the traceback's header")
    odd = read_crash({"exception": {"values": [{"type": "ValueError", "value": "x"}]},
                      "contexts": {"runtime": {"name": "CPython", "version": "3.11; rm -rf /"}}}, "0" * 32,
                     CrashLimits(), Scrubber())
    assert odd is not None and odd.runtime is None and traceback_text(odd).startswith("Traceback")


def test_the_same_crash_has_the_same_group_and_another_crash_another(
        sent: tuple[str, dict[str, str], bytes, Path]) -> None:
    crash = crash_of(sent)
    assert crash.fingerprint == crash_of(sent).fingerprint
    path, headers, body = captured(sent[3], "", call="page([], 1, 'x')")
    other = crash_of((path, headers, body, sent[3]))
    assert other.title.startswith("TypeError") and other.fingerprint != crash.fingerprint


def test_secrets_the_event_carries_never_reach_the_traceback(sent: tuple[str, dict[str, str], bytes, Path]) -> None:
    _, headers, body, _ = sent
    _, event = event_of_envelope(decoded(body, headers.get("Content-Encoding"), 1_000_000))
    assert event is not None
    frame = event["exception"]["values"][-1]["stacktrace"]["frames"][-1]
    frame["vars"] |= {"api_key": "'sk-live-0123456789abcdefghij'", "headers": {"Authorization": "'Bearer abc'"},
                      "note": "'ghp_0123456789abcdefghijklmnopqrst'", "db": "'postgres://u:hunter22@db/x'"}
    event["exception"]["values"][-1]["value"] = "token glpat-0123456789abcdefghij refused"
    event["request"] = {"headers": {"Cookie": "session=s3cr3t-cookie-value"}, "cookies": "session=s3cr3t"}
    text = traceback_text(read_crash(event, "0" * 32, CrashLimits(), Scrubber()))
    for secret in ("sk-live-0123456789", "Bearer abc", "ghp_0123456789", "hunter22", "glpat-0123", "s3cr3t"):
        assert secret not in text, text
    assert "api_key = [REDACTED]" in text and "token [REDACTED] refused" in text


def test_sizes_are_bounded_and_bombs_refused() -> None:
    big = b"x" * 5000
    assert decoded(gzip.compress(big), "gzip", 5000) == big
    assert decoded(zlib.compress(big), "deflate", 5000) == big
    with pytest.raises(EventTooLarge):
        decoded(gzip.compress(b"\0" * 50_000_000), "gzip", 1_000_000)
    with pytest.raises(EventTooLarge):
        decoded(big, None, 4999)
    with pytest.raises(BadEvent, match="not supported"):
        decoded(big, "br", 10_000)
    with pytest.raises(BadEvent, match="cannot be decompressed"):
        decoded(b"not gzip at all", "gzip", 10_000)
    with pytest.raises(BadEvent, match="ends before"):
        decoded(gzip.compress(big)[:-4], "gzip", 10_000)


@pytest.mark.parametrize(("body", "words"), [
    (b"not json\n", "envelope header is not JSON"),
    (b'{}\n{"type":"event","length":999}\n{}', "length does not fit"),
    (b'{}\n{"type":"event"}\n[1, 2]\n', "not a JSON object"),
    (b'{}\n{"type":"event"}\n{}\n{"type":"event"}\n{}\n', "more than one event"),
    (b'{"event_id":"nothex"}\n', "32 hexadecimal"),
])
def test_malformed_envelopes_are_refused_with_a_reason(body: bytes, words: str) -> None:
    with pytest.raises(BadEvent, match=words):
        event_of_envelope(body)


@pytest.mark.parametrize(("event", "words"), [
    ({"exception": {"values": "x"}}, "list of objects"),
    ({"exception": {"values": [{"type": "Index Error; rm -rf"}]}}, "not a Python name"),
    ({"exception": {"values": [{"type": "E", "stacktrace": {"frames": ["x"]}}]}}, "not an object"),
    ({"exception": {"values": [{"type": "E", "stacktrace": {"frames": [{"lineno": "12"}]}}]}}, "lineno must be"),
])
def test_malformed_events_are_refused_with_a_reason(event: dict[str, Any], words: str) -> None:
    with pytest.raises(BadEvent, match=words):
        read_crash(event, "0" * 32, CrashLimits(), Scrubber())


def test_an_event_without_an_exception_is_no_crash_and_an_envelope_of_other_items_no_event() -> None:
    assert read_crash({"message": "hello"}, "0" * 32, CrashLimits(), Scrubber()) is None
    body = b'{"event_id":"' + b"a" * 32 + b'"}\n{"type":"session"}\n' + json.dumps({"sid": "x"}).encode() + b"\n"
    assert event_of_envelope(body) == ("a" * 32, None)
