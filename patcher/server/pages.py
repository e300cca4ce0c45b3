"""The review pages: the job list and one page per job, rendered on the server; no script runs in them.

Everything a job shows (diff, transcript, messages) is hostile text: templates autoescape, the diff goes
through Pygments (which escapes), and a strict Content-Security-Policy forbids scripts and foreign
styles. Every page with job data needs a token: an Authorization header, or the sign-in cookie that
POST /login sets from a token typed into the sign-in form (HttpOnly, SameSite=Strict, so another site's
page never sends it); without one a page redirects to /login, which shows no job data. A POST whose
Origin is another site (or `null`) is refused before it gets here (auth.HostGuard) and here again;
so the pages' Referrer-Policy is `same-origin` (with `no-referrer`, a browser sends `Origin: null` even for
the page's own forms).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jinja2
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from patcher.errors import BadInput
from patcher.request import job_request
from patcher.server.auth import COOKIE, AuthError, page_reader, who_is
from patcher.server.errors import Forbidden, TooLarge, TooMany
from patcher.server.service import FINISHED, JobService, service_of
from patcher.server.store import STATES

router = APIRouter(include_in_schema=False)
STATUS = {Forbidden: 403, TooLarge: 413, TooMany: 429}
STEPS = ("verify", "guard_stop", "offline")
"""Trace events shown as steps under the transcript (live.js shows the same ones as they come)."""
TEMPLATES = Path(__file__).parent / "web" / "templates"
CSP = ("default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
"""Scripts only from this server's own files (live.js), never inline: markup a job's text could smuggle in
would not run even if it escaped the templates."""
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
           "X-Frame-Options": "DENY", "Cache-Control": "no-store"}


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False, sort_keys=True)  # escaped as text
    return env


def render(name: str, status: int = 200, **variables: Any) -> HTMLResponse:
    return HTMLResponse(_env().get_template(name).render(**variables), status, headers=HEADERS)


def reader(request: Request) -> str | None:
    """The name of whoever reads the page, None when the request carries no usable token."""
    try:
        return page_reader(service_of(request).settings, request.headers.get("authorization"),
                           request.cookies.get(COOKIE))
    except AuthError:
        return None


def _sign_in(request: Request) -> RedirectResponse:
    return RedirectResponse("/login?" + urlencode({"next": request.url.path}), 303, headers=HEADERS)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, state: str | None = None) -> Response:
    if (who := reader(request)) is None:
        return _sign_in(request)
    service = service_of(request)
    state = state if state in STATES else None
    return _index(service, who, state)


def _index(service: JobService, who: str, state: str | None = None, error: str | None = None,
           form: dict[str, str] | None = None, status: int = 200) -> HTMLResponse:
    jobs = service.summaries(service.list_jobs(state, 200))
    return render("index.html", status, jobs=jobs, state=state, who=who, error=error, form=form or {},
                  may_submit=service.settings.may(who, "submit"), roots=service.settings.repo_roots)


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, job_id: str) -> Response:
    if (who := reader(request)) is None:
        return _sign_in(request)
    return _job_page(service_of(request), job_id, who)


@router.get("/login", response_class=HTMLResponse)
def login_page(next: str = "/", error: str | None = None) -> HTMLResponse:
    return render("login.html", 401 if error else 200, next=_local(next), error=error, who=None)


@router.post("/login")
async def login(request: Request) -> Response:
    form = await _form(request)
    token, target = form.get("token", "").strip(), _local(form.get("next", "/"))
    try:
        who_is(service_of(request).settings, f"Bearer {token}" if token else "Bearer")
    except AuthError as e:
        return render("login.html", e.status, next=target, error=str(e), who=None)
    response = RedirectResponse(target, 303, headers=HEADERS)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/",
                        secure=request.url.scheme == "https")
    return response


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", 303, headers=HEADERS)
    response.delete_cookie(COOKIE, path="/")
    return response


FORM_FIELDS = ("repo", "ref", "traceback", "test_command", "engine")


@router.post("/jobs")
async def submit_form(request: Request) -> Response:
    """The job list's form: a new job as the signed-in token (submit permission), then its live page."""
    service = service_of(request)
    form = await _form(request)
    kept = {k: form.get(k, "") for k in FORM_FIELDS}
    who = reader(request)
    if who is None:
        return render("login.html", 401, next="/", error="sign in to submit a job", who=None)
    if from_another_site(request):
        return _index(service, who, error="refused: the form was sent from another site", form=kept, status=403)
    fields = {k: v.strip() if k != "traceback" else v for k, v in kept.items() if v.strip()}
    try:
        job, _ = service.submit(job_request(**fields), None, who)
    except BadInput as e:
        status = next((code for kind, code in STATUS.items() if isinstance(e, kind)), 400)
        return _index(service, who, error=str(e), form=kept, status=status)
    return RedirectResponse(f"/jobs/{job.id}", 303, headers=HEADERS)


@router.post("/jobs/{job_id}/review")
async def review_form(request: Request, job_id: str) -> Response:
    service = service_of(request)
    form = await _form(request)
    if from_another_site(request):
        return _job_page(service, job_id, None, "refused: the form was sent from another site", 403)
    token = form.get("token", "").strip()
    who = None
    try:
        who = who_is(service.settings, f"Bearer {token}") if token else \
            page_reader(service.settings, request.headers.get("authorization"), request.cookies.get(COOKIE))
        service.review(job_id, form.get("decision", ""), who, form.get("comment", "")[:10_000])
    except AuthError as e:
        return _job_page(service, job_id, reader(request), str(e), e.status)
    except BadInput as e:
        return _job_page(service, job_id, who, str(e), 403 if isinstance(e, Forbidden) else 400)
    return RedirectResponse(f"/jobs/{job_id}#review", 303, headers=HEADERS)


@router.post("/jobs/{job_id}/deliver")
async def deliver_form(request: Request, job_id: str) -> Response:
    """The job page's Retry delivery button (review permission); nothing is pushed twice."""
    service = service_of(request)
    await _form(request)
    if from_another_site(request):
        return _job_page(service, job_id, None, "refused: the form was sent from another site", 403)
    who = reader(request)
    try:
        if who is None:
            raise AuthError(401, "sign in to deliver a job")
        service.allowed(who, "review")
        service.outbox.retry(job_id)
    except AuthError as e:
        return _job_page(service, job_id, who, str(e), e.status)
    except BadInput as e:
        return _job_page(service, job_id, who, str(e), 403 if isinstance(e, Forbidden) else 409)
    return RedirectResponse(f"/jobs/{job_id}#delivery", 303, headers=HEADERS)


def from_another_site(request: Request) -> bool:
    """Whether a form was posted by another site's page (its Origin is not this Host); HostGuard refuses
    those first, this is the second lock on every page that changes state."""
    origin = request.headers.get("origin")
    return origin is not None and urlsplit(origin).netloc != request.headers.get("host")


async def _form(request: Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace")).items()}


def _local(target: str) -> str:
    """Only a path on this server is a place to go after signing in (never `//host` or a URL)."""
    return target if target.startswith("/") and not target.startswith(("//", "/\\")) else "/"


@router.get("/static/live.js")
def live_script() -> Response:
    return Response((TEMPLATES.parent / "live.js").read_text(), media_type="text/javascript",
                    headers={"Cache-Control": "max-age=300", "X-Content-Type-Options": "nosniff"})


@router.get("/static/style.css")
def style() -> Response:
    css = (TEMPLATES.parent / "style.css").read_text() + HtmlFormatter(style="default").get_style_defs(".diff")
    return Response(css, media_type="text/css", headers={"Cache-Control": "max-age=300",
                                                          "X-Content-Type-Options": "nosniff"})


def _job_page(service: JobService, job_id: str, who: str | None, error: str | None = None, status: int = 200
              ) -> HTMLResponse:
    if who is None:  # no job data for a request without a usable token, not even whether the job exists
        return render("login.html", status if status in (401, 403) else 401, next=f"/jobs/{job_id}", error=error,
                      who=None)
    job = service.find(job_id)
    if job is None:
        return render("missing.html", 404, job_id=job_id, who=who)
    result = job.result or {}
    diff = result.get("diff")
    events = service.current_events(job_id)
    return render("job.html", status, job=job, summary=service.summary(job), result=result,
                  diff=Markup(highlight(diff, DiffLexer(), HtmlFormatter(cssclass="diff"))) if diff else None,
                  verification=result.get("verification"), agent=result.get("agent"),
                  rounds=transcript(events), others=[e for e in events if e.get("type") in STEPS],
                  attempts=result.get("attempts") or _verifications(events),
                  reviews=service.reviews(job_id), carried=service.carried(job), error=error,
                  delivery=service.outbox.delivery_of(job_id), webhooks=service.outbox.attempts_of(job_id),
                  delivers=service.outbox.delivers(job_id),
                  finished=job.state in FINISHED,
                  verified=job.state == "done" and result.get("status") in ("verified", "unjudged"),
                  dev=service.settings.dev, who=who)


def _verifications(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The running job's verifications so far, numbered in order across
    the worker's attempts at the job (each restarts its own `attempt` count)."""
    return [{**e, "attempt": n} for n, e in enumerate((e for e in events if e.get("type") == "attempt"), 1)]


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
