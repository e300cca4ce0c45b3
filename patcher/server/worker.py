"""`patcher worker`: runs queued jobs from the shared store on this host's Docker daemon, and serves nothing.

Any number of workers on any number of hosts share one database (PATCHER_DATABASE_URL, PostgreSQL for
more than one machine) with the API nodes (`patcher serve`, PATCHER_WORKERS=0 for an API-only node). Each
claims jobs with `FOR UPDATE SKIP LOCKED`, heartbeats their leases, writes their events to the shared log,
and keeps its own PATCHER_HOME for trace files. A worker that dies is noticed when its leases lapse:
its jobs are re-queued (or failed after `max_attempts` interrupted runs) by any other node.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from contextlib import closing

from sqlalchemy.engine import make_url

from patcher.sandbox import docker_client, require_image
from patcher.server.service import JobService
from patcher.server.settings import ServerSettings

DRAIN_S = 30.0
"""On SIGTERM, how long running jobs may take to finish; still running then, they are recovered by lease."""
log = logging.getLogger(__name__)


def preflight(settings: ServerSettings) -> None:
    """Docker answers and the sandbox image is here (EnvironmentUnavailable, exit 3, otherwise)."""
    with closing(docker_client(timeout=30)) as client:
        require_image(client, settings.sandbox_image)


def run_worker(settings: ServerSettings, stop: threading.Event | None = None,
               on_ready: Callable[[], None] | None = None) -> list[tuple[str, str]]:
    """Run jobs until `stop` is set (or SIGTERM/SIGINT when called from the main thread)."""
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    service = JobService(settings.model_copy(update={"exclusive": False}))  # others share the store
    recovered = service.start()
    where = make_url(service.store.url).render_as_string(hide_password=True)
    log.info("worker: %d job slot(s) on %s; recovered %s", settings.workers, where, recovered or "nothing")
    if on_ready is not None:
        on_ready()
    try:
        stop.wait()
    finally:
        service.stop(DRAIN_S)
    return recovered
