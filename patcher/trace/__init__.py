"""The black box: every run's events as JSONL (redacted), their analysis, rendering and SQL queries."""

from patcher.trace.analysis import analyze, analyze_file
from patcher.trace.log import Redactor, Trace, call_key, current_run_id, read_events, scrub_userinfo
from patcher.trace.render import environment_lines, render
from patcher.trace.view import trace_command

__all__ = ["Redactor", "Trace", "analyze", "analyze_file", "call_key", "current_run_id", "environment_lines",
           "read_events", "render", "scrub_userinfo", "trace_command"]
