"""The service: the HTTP API and its review pages over one JobService, sign-in and permissions, the job
store (SQLite or PostgreSQL) with its event log, the worker pool that runs jobs, and `patcher worker`.

Its edge, where crashes come in and fixes go out:

    sentry.py     the Sentry routes: the key header, the body decoded into a neutral crash (patcher/crash/)
    crashes.py    crash intake whatever the protocol: key check, rate limit, grouping, the job opened
    crashdb.py    the crash groups and events beside the jobs they opened
    projects.py   the operator's projects: keys, limits, the job a crash becomes, delivery, webhook endpoints
    outbox.py     what goes out when a job changes (webhook messages, a delivery), in the change's transaction
    outboxdb.py   the outbox's rows, claimed by one node at a time
    dispatch.py   the dispatcher: webhooks sent, a verified job delivered as a pull request (patcher/delivery/)
"""

from patcher.server.app import serve
from patcher.server.settings import load_settings
from patcher.server.worker import preflight, run_worker

__all__ = ["load_settings", "preflight", "run_worker", "serve"]
