"""Line coverage per test, for fault localization; runs inside the box as the test process itself.

    python -c 'exec(open("/opt/patcher/sandbox/linecov.py").read())' OUT -- PYTEST_ARGS…

(`python -c` is an allowed test command, so the server needs no new request.) pytest runs in this
process with a plugin that notes which repo lines (files under the working directory) each test ran
and whether it passed; OUT gets one JSON object: {"tests": [{"id", "outcome", "lines": {path: [n…]}}]}.
Standard library plus the pytest the repo's tests use. The code under test could falsify this file:
the host uses it only to order fix candidates, never to decide a verification.
"""

from __future__ import annotations  # `str | None` in signatures; a box may run Python 3.9

import json
import os
import sys
import threading

MAX_TESTS = 5000


class Tracer:
    def __init__(self, root: str) -> None:
        self.root = root
        self.files: dict[str, str | None] = {}
        self.current: set[tuple[str, int]] | None = None

    def rel(self, filename: str) -> str | None:
        rel = self.files.get(filename, "")
        if rel == "":
            inside = filename.startswith(self.root) and filename.endswith(".py")
            rel = filename[len(self.root):] if inside and "site-packages" not in filename else None
            self.files[filename] = rel = None if rel is None or rel.startswith(".") else rel
        return rel

    def call(self, frame, event, arg):  # type: ignore[no-untyped-def]
        """Global trace function: only frames of repo files get the (slower) line tracer."""
        if self.current is None or self.rel(frame.f_code.co_filename) is None:
            return None
        self.current.add((self.files[frame.f_code.co_filename], frame.f_lineno))  # type: ignore[arg-type]
        return self.line

    def line(self, frame, event, arg):  # type: ignore[no-untyped-def]
        if event == "line" and self.current is not None:
            self.current.add((self.files[frame.f_code.co_filename], frame.f_lineno))  # type: ignore[arg-type]
        return self.line


def make_plugin(pytest, tracer: Tracer):  # type: ignore[no-untyped-def]
    """A pytest plugin (built once pytest is importable) that gives each test its own line set."""

    class Plugin:
        def __init__(self) -> None:
            self.tests: list[dict[str, object]] = []
            self.outcomes: dict[str, str] = {}

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):  # type: ignore[no-untyped-def]
            tracer.current = set()
            yield
            lines, tracer.current = tracer.current, None
            if len(self.tests) < MAX_TESTS:
                by_file: dict[str, list[int]] = {}
                for path, n in sorted(lines or ()):
                    by_file.setdefault(path, []).append(n)
                outcome = self.outcomes.get(item.nodeid, "skipped")
                self.tests.append({"id": item.nodeid, "outcome": outcome, "lines": by_file})

        def pytest_runtest_logreport(self, report):  # type: ignore[no-untyped-def]
            if report.failed:
                self.outcomes[report.nodeid] = "failed"
            elif report.when == "call" and report.passed:
                self.outcomes.setdefault(report.nodeid, "passed")

    return Plugin()


def main(argv: list[str]) -> int:
    out, args = argv[0], argv[2:] if argv[1:2] == ["--"] else argv[1:]
    import pytest

    tracer = Tracer(os.getcwd() + os.sep)
    plugin = make_plugin(pytest, tracer)
    threading.settrace(tracer.call)
    sys.settrace(tracer.call)
    try:
        code = int(pytest.main(args, plugins=[plugin]))
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"tests": plugin.tests}, f)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
