"""The black box: every run's events as JSONL (redacted), their analysis, rendering and SQL queries."""

from patcher.trace.log import Redactor, Trace, call_key, current_run_id, read_events, scrub_userinfo
from patcher.trace.view import trace_command

__all__ = ["Redactor", "Trace", "call_key", "current_run_id", "read_events", "scrub_userinfo", "trace_command"]
