"""The HTTP API of `patcher serve`: thin routes over `JobService`; errors become HTTP codes only here.

Every route that shows or changes job data needs a bearer token (the review pages also take the sign-in
cookie, pages.py); /openapi.json, /docs and /static/style.css show none and need none.

    POST /v1/jobs                    202 {id}       (submit permission; Idempotency-Key header)
    GET  /v1/jobs                    {jobs: […]}    (?state=&limit=)
    GET  /v1/jobs/{id}               the `patcher fix --json` object (before it exists: id, state, message)
    POST /v1/jobs/{id}/cancel        {id, state}    (its submitter, or review permission)
    POST /v1/jobs/{id}/reverify      202 {id, of}   (submit permission): the verified diff proved again on a ref
    POST /v1/jobs/{id}/review        {review, attestation}  (review permission; who = the token's name;
                                                             the submitter cannot approve)
    GET  /v1/jobs/{id}/attestation   the DSSE envelope (404 unless verified)
    GET  /v1/jobs/{id}/events        server-sent events of the trace (Last-Event-ID resumes)
    POST /v1/jobs/{id}/deliver       202 {id, delivery}  (review permission): deliver a verified job again
    GET  /v1/jobs/{id}/delivery      {delivery, webhooks}: its pull request, and every webhook attempt
    GET  /, /jobs/{id}, /login       review pages (pages.py)
    POST /api/{project}/envelope/, /api/{project}/store/   crash intake in the Sentry protocol (sentry.py, crashes.py;
                                     the DSN's key is the credential, no token)

Every request passes HostGuard first: an unknown Host header is refused (421), and so is a state-changing
request whose Origin is another site (403).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from patcher.errors import BadInput
from patcher.server.auth import COOKIE, AuthError, HostGuard, page_reader, who_is
from patcher.server.crashes import CrashIntake
from patcher.server.errors import Conflict, Forbidden, NotAvailable, TooLarge, TooMany
from patcher.server.events import parse_last_id, stream
from patcher.server.outbox import NotDeliverable
from patcher.server.reverify import ReverifyRequest
from patcher.server.sentry import router as sentry_routes
from patcher.server.service import JobRequest, JobService, ReviewRequest, service_of
from patcher.server.settings import ServerSettings
from patcher.server.store import IdempotencyConflict, JobState, UnknownJob

STATUS = {UnknownJob: 404, NotAvailable: 404, IdempotencyConflict: 409, Conflict: 409, TooLarge: 413,
          Forbidden: 403, TooMany: 429, NotDeliverable: 409}


def token_name(request: Request, authorization: Annotated[str | None, Header()] = None) -> str:
    """The bearer token's name; a read (GET) may also use the pages' sign-in cookie (SameSite=Strict, so it
    never comes with another site's request; and a read changes nothing)."""
    if request.method == "GET":
        return page_reader(service_of(request).settings, authorization, request.cookies.get(COOKIE))
    return who_is(service_of(request).settings, authorization)


Service = Annotated[JobService, Depends(service_of)]
Who = Annotated[str, Depends(token_name)]


def create_app(settings: ServerSettings, start_workers: bool = True, bind_host: str | None = None) -> FastAPI:
    """The app; its lifespan starts the worker pool (recovering jobs a crash left) and stops it. The
    address it listens on (`bind_host`, unless a wildcard) is one of the Host names it answers to."""
    service = JobService(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if start_workers:
            service.start()
        try:
            yield
        finally:
            if start_workers:
                service.stop()

    app = FastAPI(title="patcher", version="0.1.0", lifespan=lifespan,
                  description="Sandboxed auto-patching: a traceback in, a test-verified diff out.")
    app.state.service = service
    app.state.crash_intake = CrashIntake(service)
    _errors(app)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    hosts = [*settings.allowed_hosts, *([bind_host] if bind_host and bind_host not in ("0.0.0.0", "::") else [])]
    app.add_middleware(HostGuard, allowed=hosts)
    _routes(app)
    from patcher.server.pages import router as pages

    app.include_router(pages)
    app.include_router(sentry_routes)
    return app


def _routes(app: FastAPI) -> None:
    @app.post("/v1/jobs", status_code=202)
    def submit(body: JobRequest, service: Service, who: Who,
               idempotency_key: Annotated[str | None, Header()] = None) -> JSONResponse:
        job, created = service.submit(body, idempotency_key, who)
        return JSONResponse({"id": job.id}, 202, headers={"Location": f"/v1/jobs/{job.id}",
                                                          "Idempotent-Replayed": str(not created).lower()})

    @app.post("/v1/jobs/{job_id}/reverify", status_code=202)
    def reverify(job_id: str, body: ReverifyRequest, service: Service, who: Who,
                 idempotency_key: Annotated[str | None, Header()] = None) -> JSONResponse:
        """Prove a verified job's diff again on another ref (no agent): a new job, whose record names the same
        digest on the new base and carries the approval of that digest (reverify.py)."""
        job, created = service.reverify(job_id, body.ref, idempotency_key, who)
        return JSONResponse({"id": job.id, "of": job_id}, 202, headers={
            "Location": f"/v1/jobs/{job.id}", "Idempotent-Replayed": str(not created).lower()})

    @app.get("/v1/jobs")
    def list_jobs(service: Service, who: Who,
                  state: JobState | None = None,
                  limit: Annotated[int, Query(ge=1, le=500)] = 50) -> dict[str, Any]:
        return {"jobs": service.summaries(service.list_jobs(state, limit))}

    @app.get("/v1/jobs/{job_id}")
    def get_job(job_id: str, service: Service, who: Who) -> JSONResponse:
        job = service.get(job_id)
        return JSONResponse(service.view(job), headers={"X-Patcher-Job-State": job.state})

    @app.post("/v1/jobs/{job_id}/cancel")
    def cancel(job_id: str, service: Service, who: Who) -> dict[str, str]:
        return {"id": job_id, "state": service.cancel(job_id, who)}

    @app.post("/v1/jobs/{job_id}/review")
    def review(job_id: str, body: ReviewRequest, service: Service, who: Who) -> dict[str, Any]:
        done, envelope = service.review(job_id, body.decision, who, body.comment)
        return {"review": {"decision": done.decision, "who": done.who, "when": done.when.isoformat(),
                           "comment": done.comment}, "attestation": envelope}

    @app.get("/v1/jobs/{job_id}/attestation")
    def attestation(job_id: str, service: Service, who: Who) -> dict[str, Any]:
        return service.attestation(job_id)

    @app.post("/v1/jobs/{job_id}/deliver", status_code=202)
    def deliver(job_id: str, service: Service, who: Who) -> JSONResponse:
        """Deliver a verified job (again): after a failed push or pull request, or for one not yet delivered;
        nothing is pushed twice (delivery/run.py). 409 when there is nothing to deliver."""
        service.allowed(who, "review")
        service.get(job_id)
        return JSONResponse({"id": job_id, "delivery": service.outbox.retry(job_id)}, 202)

    @app.get("/v1/jobs/{job_id}/delivery")
    def delivery(job_id: str, service: Service, who: Who) -> dict[str, Any]:
        service.get(job_id)
        return {"delivery": service.outbox.delivery_of(job_id), "webhooks": service.outbox.attempts_of(job_id)}

    @app.get("/v1/jobs/{job_id}/events", response_class=StreamingResponse)
    def events(job_id: str, service: Service, who: Who,
               last_event_id: Annotated[str | None, Header()] = None) -> StreamingResponse:
        service.get(job_id)
        return StreamingResponse(stream(service, job_id, parse_last_id(last_event_id)), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _errors(app: FastAPI) -> None:
    @app.exception_handler(BadInput)
    async def bad_input(request: Request, exc: BadInput) -> JSONResponse:
        status = next((code for kind, code in STATUS.items() if isinstance(exc, kind)), 400)
        return JSONResponse({"detail": str(exc)}, status)

    @app.exception_handler(AuthError)
    async def auth(request: Request, exc: AuthError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
        return JSONResponse({"detail": str(exc)}, exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [f"{'.'.join(str(p) for p in err.get('loc', ()))}: {err.get('msg')}" for err in exc.errors()]
        return JSONResponse({"detail": "invalid request: " + "; ".join(problems),
                             "errors": [{"loc": e.get("loc"), "msg": e.get("msg"), "type": e.get("type")}
                                        for e in exc.errors()]}, 422)


class BodyLimit:
    """Refuses a request body over `limit` bytes with 413, by its Content-Length or as it arrives."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            return await self._refuse(send)
        chunks, size, more = [], 0, True
        while more:  # bodies are small: read it whole, then replay it to the app
            msg = await receive()
            if msg["type"] != "http.request":
                return await self.app(scope, _replay([msg], receive), send)
            chunks.append(msg)
            size += len(msg.get("body", b""))
            more = msg.get("more_body", False)
            if size > self.limit:
                return await self._refuse(send)
        return await self.app(scope, _replay(chunks, receive), send)

    async def _refuse(self, send: Send) -> None:
        response = JSONResponse({"detail": f"the request body is larger than {self.limit} bytes "
                                           "(PATCHER_MAX_BODY_BYTES)"}, 413)
        await response({"type": "http"}, _nothing, send)


def _replay(messages: list[Message], receive: Receive) -> Callable[[], Awaitable[Message]]:
    queue = list(messages)

    async def again() -> Message:
        return queue.pop(0) if queue else await receive()

    return again


async def _nothing() -> Message:
    return {"type": "http.disconnect"}


def serve(host: str = "127.0.0.1", port: int = 8000) -> None:
    """`patcher serve`: settings from the environment (BadInput when unusable), then uvicorn until a signal."""
    import uvicorn

    from patcher.server.settings import load_settings

    app = create_app(load_settings(), bind_host=host)
    uvicorn.run(app, host=host, port=port, log_level="info", timeout_graceful_shutdown=10)
