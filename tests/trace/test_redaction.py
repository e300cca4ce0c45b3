"""Redaction of URL userinfo, encoded forms of secrets and secret-looking environment names, in real traces
and real model errors; and CLI output that shows terminal control sequences and markup instead of obeying them."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patcher.errors import ModelUnreachable
from patcher.model import ModelConfig, OpenAIModel
from patcher.termsafe import markup_safe, plain
from patcher.trace import Redactor, Trace, read_events

KEY = "sk-test-4f7d2a9c0b1e8f3a6d5c"


def _written(tmp_path: Path, redactor: Redactor, **fields: object) -> str:
    with Trace(tmp_path / "t.jsonl", "r1", redactor) as trace:
        trace.emit("probe", **fields)
    return (tmp_path / "t.jsonl").read_text()


@pytest.mark.parametrize("text", [
    "clone https://alice:ghp_abcdefghijklmnopqrstu@github.com/o/r.git failed",
    "remote: https://ghp_abcdefghijklmnopqrstu@github.com/o/r.git",
    "DSN postgresql://app:ghp_abcdefghijklmnopqrstu@db:5432/x",
])
def test_url_userinfo_is_redacted_anywhere(tmp_path: Path, text: str) -> None:
    line = _written(tmp_path, Redactor([], env={}), message=text, repo=text)
    assert "ghp_abcdefghijklmnopqrstu" not in line and "[REDACTED]@" in line


def test_base64_and_hex_forms_of_a_secret_are_redacted(tmp_path: Path) -> None:
    basic = base64.b64encode(f"user:{KEY}".encode()).decode()
    forms = [basic, base64.urlsafe_b64encode(f"xy{KEY}".encode()).decode(), KEY.encode().hex(),
             KEY.encode().hex().upper(), base64.b64encode(f"Bearer {KEY}\n".encode()).decode()]
    line = _written(tmp_path, Redactor([KEY], env={}), output=" | ".join(forms))
    for form in forms:
        assert form not in line
    body = json.loads(line)["output"]
    assert body.count("[REDACTED]") >= len(forms), body


def test_secret_looking_environment_names_are_redacted(tmp_path: Path) -> None:
    env = {"PATCHER_TOKENS": "alice:alice-3f9a1c0d5e7b2a4c,bob:bob-9b8a7c6d5e4f3a2b", "GITHUB_PAT": "pat-1234567890ab",
           "PGPASSWORD": "pg-secret-value-1", "PATCHER_DATABASE_URL": "postgresql://u:dbpass-77xx@db/p",
           "HOME": "/root-home-not-secret"}
    text = "tokens alice-3f9a1c0d5e7b2a4c and bob-9b8a7c6d5e4f3a2b, pat-1234567890ab, pg-secret-value-1, " \
           "postgresql://u:dbpass-77xx@db/p, /root-home-not-secret"
    line = _written(tmp_path, Redactor([], env=env), output=text)
    for secret in ("alice-3f9a1c0d5e7b2a4c", "bob-9b8a7c6d5e4f3a2b", "pat-1234567890ab", "pg-secret-value-1",
                   "dbpass-77xx"):
        assert secret not in line
    assert "/root-home-not-secret" in line


def test_a_model_error_naming_a_base_url_with_credentials_is_redacted(tmp_path: Path) -> None:
    model = OpenAIModel(ModelConfig(model="m", base_url="http://user:url-pass-1234@127.0.0.1:9/v1", api_key=KEY,
                                    max_retries=0, idle_timeout_s=2))
    with pytest.raises(ModelUnreachable) as e:
        model.complete([{"role": "user", "content": "hi"}], [])
    line = _written(tmp_path, Redactor([KEY], env={}), message=str(e.value))
    assert "url-pass-1234" not in line and "127.0.0.1:9" in line
    assert read_events(tmp_path / "t.jsonl")[0]["message"].count("[REDACTED]") == 1


def test_terminal_control_sequences_and_markup_become_visible_text() -> None:
    hostile = "ok\x1b[2K\r\x1b]8;;http://evil\x07link\x1b]8;;\x07 [green]verified[/] [/x] \u202e"
    shown = plain(hostile)
    assert "\x1b" not in shown and "\r" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "\\x1b[2K" in shown and "\\x0d" in shown
    assert markup_safe("[green]verified[/]") == "\\[green]verified\\[/]"


def test_the_cli_prints_a_hostile_path_as_text(tmp_path: Path) -> None:
    evil = tmp_path / "repo\x1b]0;pwned\x07[green]verified[red]\x1b[2K"
    evil.mkdir()
    tb = tmp_path / "tb.txt"
    tb.write_text("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nValueError: x\n")
    env = {**os.environ, "PATCHER_HOME": str(tmp_path / "home")}
    out = subprocess.run([str(Path(sys.executable).parent / "patcher"), "fix", str(evil), "--traceback", str(tb),
                          "--test", "python -c 1", "--engine", "offline"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 2, out.stderr
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr and "MarkupError" not in out.stderr
    assert "repo\\x1b]0;pwned\\x07[green]verified[red]\\x1b[2K" in out.stderr, out.stderr
    assert "not a git repository" in out.stderr
