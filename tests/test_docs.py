"""The README is a short front page linking every docs/ page, README and docs/ link only to files and headings that
exist in the repository, and docs/contract.md names what the code has."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from patcher.agent.tools import AGENT_TOOLS
from patcher.cli import app
from patcher.result import EXIT_CODES, REASONS, TABLE
from patcher.verify.judges import JUDGES

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").rglob("*.md"))]
CONTRACT = (ROOT / "docs" / "contract.md").read_text()
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_PATH = re.compile(r"`((?:\.\./|/)[^`\s]*)`")
EVENTS = re.compile(r"""\.emit\(\s*["'](\w+)["']""")
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$")
README_LINES = 250


def test_the_readme_is_a_front_page_of_at_most_250_lines() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= README_LINES, f"README.md has {lines} lines: move a section to a page under docs/"


def test_the_readme_links_every_page_of_docs() -> None:
    linked = {(ROOT / target.split("#", 1)[0]).resolve() for target in LINK.findall(README.read_text())}
    pages = [p for p in sorted((ROOT / "docs").rglob("*")) if p.is_file()]
    assert pages, "no docs pages found: the path is stale"
    assert not [p for p in pages if p.resolve() not in linked], [
        str(p.relative_to(ROOT)) for p in pages if p.resolve() not in linked]


def test_every_anchor_a_link_names_is_a_heading_of_its_page() -> None:
    bad = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"[a-z][a-z+.-]*:", target) or "#" not in target:
                continue
            path, anchor = target.split("#", 1)
            page = (doc.parent / path).resolve() if path else doc
            if page.suffix == ".md" and page.exists() and anchor not in _anchors(page):
                bad.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not bad, bad


def test_the_anchors_are_githubs() -> None:
    assert _slug('What "verified" means') == "what-verified-means"
    assert _slug("The `--json` result") == "the---json-result"
    assert _slug("The repository's Python") == "the-repositorys-python"
    assert _slug("HTTP API (`patcher serve`)") == "http-api-patcher-serve"


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: a heading's slug, then slug-1, slug-2 for repeats."""
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := HEADING.match(line)):
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            if n:
                seen[f"{slug}-{n}"] = 1
    return set(seen)


def _slug(heading: str) -> str:
    """GitHub's heading anchor: markup and punctuation dropped (hyphens and underscores kept), lower case, spaces
    to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


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
        bad += [f"{doc.relative_to(ROOT)}: a link broken across a line: {m}" for m in re.findall(r"\]\(\s+\S*", text)]
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


def test_the_readmes_table_of_statuses_is_the_codes_exit_codes() -> None:
    table = README.read_text().split("\n| status | exit |", 1)[1].split("\n\n", 1)[0]
    rows = dict(re.findall(r"^\| `(\w+)` \| (\d) \|", table, re.M))
    assert {s: int(c) for s, c in rows.items()} == EXIT_CODES


def test_the_readmes_table_of_judges_and_docs_verified_are_the_list_of_judges() -> None:
    readme = README.read_text()
    rows = re.findall(r"^\| `(\w+)` \| (\d+) \| [^|]+ \| ([^|]+) \| (yes|no) \|", readme, re.M)
    assert [(name, int(check), set(re.findall(r"`(\w+)`", refuses)), needed == "yes") for name, check, refuses, needed
            in rows] == [(j.name, j.check, set(j.reasons), j.required) for j in JUDGES]
    verified = (ROOT / "docs" / "verified.md").read_text()
    checks = re.findall(r"^(\d+)\. \*\*[^*]+\*\* \(judge `(\w+)`", verified, re.M)
    assert sorted((int(n), name) for n, name in checks) == sorted((j.check, j.name) for j in JUDGES)
