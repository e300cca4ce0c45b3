"""The service: the HTTP API and its review pages over one JobService, sign-in and permissions, the job
store (SQLite or PostgreSQL) with its event log, the worker pool that runs jobs, and `patcher worker`.
"""

from patcher.server.app import serve
from patcher.server.settings import load_settings
from patcher.server.worker import preflight, run_worker

__all__ = ["load_settings", "preflight", "run_worker", "serve"]
