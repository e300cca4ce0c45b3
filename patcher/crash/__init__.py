"""Crash reports from error trackers: a Sentry SDK's envelope (or store body) read within bounds into a crash,
its exception chain rendered as the traceback a job takes, its group, its secrets redacted.

    body = decoded(raw, content_encoding, limits.max_event_bytes)        body.py
    event_id, event = event_of_envelope(body)                            envelope.py
    crash = read_crash(event, event_id, limits, Scrubber())              event.py, scrub.py
    text = traceback_text(crash)                                         render.py
"""

from patcher.crash.body import BadEvent, EventTooLarge, decoded
from patcher.crash.envelope import event_id_of, event_of_envelope, event_of_store, sentry_key
from patcher.crash.event import Crash, CrashException, CrashFrame, CrashLimits, read_crash
from patcher.crash.render import traceback_text
from patcher.crash.scrub import Scrubber

__all__ = ["BadEvent", "Crash", "CrashException", "CrashFrame", "CrashLimits", "EventTooLarge", "Scrubber",
           "decoded", "event_id_of", "event_of_envelope", "event_of_store", "read_crash", "sentry_key",
           "traceback_text"]
