"""`python -m patcher_runner (-m MODULE | SCRIPT) ARGS` runs a project's own unittest-based test runner under
the harness: Django's `manage.py test …`, or a module that runs unittest (`python -m tornado.test.runtests`).

Before the entry point runs, every unittest result (`unittest.TestResult` and whatever subclass the runner
uses, as long as it calls up to it, as Django's and unittest's own do) reports each test's outcome on the
evidence channel as it ends, in this process only (a forked worker of a parallel run does not write; the
parent replays its results). The end record carries the exit code the entry point chose: for these runners
it is the runner's own verdict, which the host reads beside the stream.
"""

import os
import runpy
import sys
import traceback
import unittest

from patcher_channel import channel, frames, type_name

_PID = os.getpid()
_ran = [0]


def _emit(test, outcome, err=None):  # type: ignore[no-untyped-def]
    if os.getpid() != _PID:
        return
    _ran[0] += 1
    test_id = test.id() if hasattr(test, "id") else str(test)
    record = {"k": "test", "id": test_id, "when": "call", "outcome": outcome}
    if err is not None:
        record.update(exc=type_name(err[0]), frames=frames(err[2]))
    channel.emit(record)


def _report(name, outcome, with_err):  # type: ignore[no-untyped-def]
    original = getattr(unittest.TestResult, name)

    def method(self, test, *args):  # type: ignore[no-untyped-def]
        original(self, test, *args)
        err = args[0] if with_err and args and isinstance(args[0], tuple) else None
        _emit(test, outcome, err)

    setattr(unittest.TestResult, name, method)


def _report_subtests() -> None:
    original = unittest.TestResult.addSubTest

    def method(self, test, subtest, err):  # type: ignore[no-untyped-def]
        original(self, test, subtest, err)
        if err is not None:
            _emit(test, "failed", err)

    unittest.TestResult.addSubTest = method  # type: ignore[method-assign]


def install() -> None:
    for name, outcome, with_err in (("addSuccess", "passed", False), ("addFailure", "failed", True),
                                    ("addError", "failed", True), ("addSkip", "skipped", False),
                                    ("addExpectedFailure", "passed", False),
                                    ("addUnexpectedSuccess", "failed", False)):
        _report(name, outcome, with_err)
    _report_subtests()


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main(argv: list) -> int:
    if not argv or (argv[0] == "-m" and len(argv) < 2):
        print("usage: python -m patcher_runner (-m MODULE | SCRIPT) [ARGS]", file=sys.stderr)
        return 2
    install()
    code = 0
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        code = _exit_code(e.code)
    except BaseException:  # what the interpreter would do: print it, exit 1
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    channel.emit({"k": "end", "exit": code, "ran": _ran[0]})
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
