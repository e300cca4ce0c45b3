"""What a delivery says: the commit message, the pull request's title and body, a Slack message. Templates
are files (templates/*.j2); every text that came from the crash or the repository is put in code spans, so
it cannot render as markdown, a link or an @mention."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class Facts:
    """A job as a delivery tells of it."""

    job_id: str
    review_link: str
    record_link: str
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    """The result's one sentence."""
    diff_sha256: str | None = None
    files_changed: list[str] = field(default_factory=list)
    verification: dict[str, Any] = field(default_factory=dict)
    crash: dict[str, Any] | None = None
    """The crash group behind the job (title, culprit, project, release, count, first_seen, last_seen)."""
    repo: str | None = None
    pull_request: str | None = None


def code(value: object) -> str:
    """Text as one markdown code span: no backticks or line breaks left to break out of it."""
    text = " ".join(str(value).replace("`", "'").split())
    return f"`{text[:300]}`" if text else "``"


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["code"] = code
    return env


def render(name: str, facts: Facts, **more: Any) -> str:
    return _env().get_template(name).render(f=facts, **more)


def pr_title(facts: Facts) -> str:
    what = (facts.crash or {}).get("title") or facts.message or "a crash"
    where = (facts.crash or {}).get("culprit")
    title = f"Fix {what}" + (f" in {where}" if where else "")
    return " ".join(title.split())[:200]


def commit_message(facts: Facts) -> str:
    return render("commit.j2", facts, title=pr_title(facts))


def pr_body(facts: Facts) -> str:
    return render("pull_request.md.j2", facts)
