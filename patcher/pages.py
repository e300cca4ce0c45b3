"""The review pages: the job list and one page per job, rendered on the server; no script runs in them.

Everything a job shows (diff, transcript, messages) is hostile text: templates autoescape, the diff goes
through Pygments (which escapes), and a strict Content-Security-Policy forbids scripts and foreign
styles. The review form is CSRF-safe without cookies: it authenticates with the reviewer's bearer token,
typed into the form, which another site cannot know; a POST whose Origin is another site is refused too.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jinja2
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from .api_auth import AuthError, who_is
from .api_service import FINISHED, JobService
from .errors import BadInput

router = APIRouter(include_in_schema=False)
TEMPLATES = Path(__file__).parent / "web" / "templates"
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
       "base-uri 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY", "Cache-Control": "no-store"}


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False, sort_keys=True)  # escaped as text
    return env


def render(name: str, status: int = 200, **variables: Any) -> HTMLResponse:
    return HTMLResponse(_env().get_template(name).render(**variables), status, headers=HEADERS)


def service_of(request: Request) -> JobService:
    return request.app.state.service  # type: ignore[no-any-return]


@router.get("/", response_class=HTMLResponse)
def index(request: Request, state: str | None = None) -> HTMLResponse:
    service = service_of(request)
    state = state if state in ("queued", "running", "done", "failed", "cancelled") else None
    jobs = [service.summary(job) for job in service.list_jobs(state, 200)]
    return render("index.html", jobs=jobs, state=state)


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, job_id: str) -> HTMLResponse:
    return _job_page(service_of(request), job_id)


@router.post("/jobs/{job_id}/review")
async def review_form(request: Request, job_id: str) -> Response:
    service = service_of(request)
    form = {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace")).items()}
    origin = request.headers.get("origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host"):
        return _job_page(service, job_id, "refused: the form was sent from another site", 403)
    token = form.get("token", "").strip()
    try:
        who = who_is(service.settings, f"Bearer {token}" if token else None)
        service.review(job_id, form.get("decision", ""), who, form.get("comment", "")[:10_000])
    except AuthError as e:
        return _job_page(service, job_id, str(e), e.status)
    except BadInput as e:
        return _job_page(service, job_id, str(e), 400)
    return RedirectResponse(f"/jobs/{job_id}#review", 303, headers=HEADERS)


@router.get("/static/style.css")
def style() -> Response:
    css = (TEMPLATES.parent / "style.css").read_text() + HtmlFormatter(style="default").get_style_defs(".diff")
    return Response(css, media_type="text/css", headers={"Cache-Control": "max-age=300",
                                                          "X-Content-Type-Options": "nosniff"})


def _job_page(service: JobService, job_id: str, error: str | None = None, status: int = 200) -> HTMLResponse:
    job = service.store.get(job_id)
    if job is None:
        return render("missing.html", 404, job_id=job_id)
    result = job.result or {}
    diff = result.get("diff")
    events = service.current_events(job_id)
    return render("job.html", status, job=job, summary=service.summary(job), result=result,
                  diff=Markup(highlight(diff, DiffLexer(), HtmlFormatter(cssclass="diff"))) if diff else None,
                  verification=result.get("verification"), agent=result.get("agent"),
                  rounds=transcript(events), others=[e for e in events if e.get("type") in ("verify", "guard_stop")],
                  reviews=service.reviews(job_id), error=error, finished=job.state in FINISHED,
                  verified=job.state == "done" and result.get("status") == "verified",
                  dev=service.settings.dev)


def transcript(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's rounds: what the model said and asked for, and what each tool answered."""
    rounds: dict[int, dict[str, Any]] = {}
    for e in events:
        if e.get("type") not in ("model_call", "tool_call") or not isinstance(e.get("round"), int):
            continue
        entry = rounds.setdefault(e["round"], {"round": e["round"], "model": None, "tools": []})
        if e["type"] == "model_call":
            entry["model"] = e
        else:
            entry["tools"].append(e)
    return [rounds[n] for n in sorted(rounds)]
