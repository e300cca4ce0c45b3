"""The README and docs/ link only inside the repository, and docs/contract.md names what the code has."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from patcher.agent.tools import AGENT_TOOLS
from patcher.cli import app
from patcher.result import EXIT_CODES, REASONS, TABLE
from patcher.verify.judges import JUDGES

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CONTRACT = (ROOT / "docs" / "contract.md").read_text()
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_PATH = re.compile(r"`((?:\.\./|/)[^`\s]*)`")
EVENTS = re.compile(r"""\.emit\(\s*["'](\w+)["']""")


def test_every_link_of_the_docs_stays_inside_the_repository_and_resolves() -> None:
    bad = []
    for doc in DOCS:
        text = doc.read_text()
        for target in LINK.findall(text):
            if re.match(r"[a-z][a-z+.-]*:", target) or target.startswith("#"):
                continue  # a web address or an anchor on the page
            path = (doc.parent / target.split("#", 1)[0]).resolve()
            if not path.is_relative_to(ROOT) or not path.exists():
                bad.append(f"{doc.relative_to(ROOT)}: {target}")
        bad += [f"{doc.relative_to(ROOT)}: {p}" for p in CODE_PATH.findall(text) if p.startswith("../")]
    assert not bad, bad


def test_the_contract_lists_every_reason_tool_and_command() -> None:
    named = set(re.findall(r"`(\w+)`", CONTRACT))
    assert not REASONS - named, REASONS - named
    assert set(AGENT_TOOLS) <= named, set(AGENT_TOOLS) - named
    group = typer.main.get_group(app)
    commands = {f"patcher {name}" for name in group.commands}
    assert all(c in CONTRACT for c in commands), [c for c in commands if c not in CONTRACT]
    leaves = [leaf for command in group.commands.values()
              for leaf in getattr(command, "commands", {None: command}).values()]
    flags = {flag for leaf in leaves for param in leaf.params for flag in param.opts
             if flag.startswith("--") and flag != "--help"}
    assert all(f"{flag} " in CONTRACT or f"{flag}]" in CONTRACT for flag in flags), sorted(
        f for f in flags if f"{f} " not in CONTRACT and f"{f}]" not in CONTRACT)


def test_the_contract_lists_every_trace_event_the_code_writes() -> None:
    written = {m for f in (ROOT / "patcher").rglob("*.py") for m in EVENTS.findall(f.read_text())}
    assert written, "no trace.emit calls found: the pattern is stale"
    listed = set(re.findall(r"^\| `(\w+)` \|", CONTRACT, re.M))
    assert written <= listed, written - listed


def test_the_contracts_table_of_reasons_is_the_codes_table() -> None:
    rows = _rows()
    listed = {r: rows[r][0] if r in rows else None for r in TABLE}
    assert listed == {r: row.status for r, row in TABLE.items()}, "status of each reason"
    said = {r: text for r, (_, text) in _rows().items() if r in TABLE}
    assert said == {r: row.meaning for r, row in TABLE.items()}, "each reason's sentence"
    assert set(TABLE) == REASONS
    codes = dict(re.findall(r"^\| (\d) \| (\w+)", CONTRACT, re.M))
    assert {s: int(c) for c, s in codes.items() if s in EXIT_CODES} == {
        s: c for s, c in EXIT_CODES.items() if s in ("verified", "unjudged")}


def _rows() -> dict[str, tuple[str, str]]:
    return {r: (s, m) for r, s, m in re.findall(r"^\| `(\w+)` \| (\w+) \| (.+) \|$", CONTRACT, re.M)}


def test_the_readmes_table_of_judges_and_docs_verified_are_the_list_of_judges() -> None:
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| (\d+) \| [^|]+ \| ([^|]+) \| (yes|no) \|", readme, re.M)
    assert [(name, int(check), set(re.findall(r"`(\w+)`", refuses)), needed == "yes") for name, check, refuses, needed
            in rows] == [(j.name, j.check, set(j.reasons), j.required) for j in JUDGES]
    verified = (ROOT / "docs" / "verified.md").read_text()
    checks = re.findall(r"^(\d+)\. \*\*[^*]+\*\* \(judge `(\w+)`", verified, re.M)
    assert sorted((int(n), name) for n, name in checks) == sorted((j.check, j.name) for j in JUDGES)
