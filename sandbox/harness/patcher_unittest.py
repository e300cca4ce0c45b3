"""`python -m patcher_unittest ARGS` runs `python -m unittest ARGS` with a harness result class.

Each test's outcome goes out on the evidence channel as it ends (patcher_channel), then an end record
with the exit code this runner returns; the text unittest prints is for people only.
"""

import sys
import unittest

from patcher_channel import channel, frames, type_name


class _Result(unittest.TextTestResult):
    def _emit(self, test, outcome, err=None):  # type: ignore[no-untyped-def]
        record = {"k": "test", "id": test.id(), "when": "call", "outcome": outcome}
        if err is not None:
            record.update(exc=type_name(err[0]), frames=frames(err[2]))
        channel.emit(record)

    def addSuccess(self, test):  # type: ignore[no-untyped-def]
        super().addSuccess(test)
        self._emit(test, "passed")

    def addFailure(self, test, err):  # type: ignore[no-untyped-def]
        super().addFailure(test, err)
        self._emit(test, "failed", err)

    def addError(self, test, err):  # type: ignore[no-untyped-def]
        super().addError(test, err)
        self._emit(test, "failed", err)

    def addSubTest(self, test, subtest, err):  # type: ignore[no-untyped-def]
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._emit(test, "failed", err)

    def addSkip(self, test, reason):  # type: ignore[no-untyped-def]
        super().addSkip(test, reason)
        self._emit(test, "skipped")

    def addExpectedFailure(self, test, err):  # type: ignore[no-untyped-def]
        super().addExpectedFailure(test, err)
        self._emit(test, "passed")

    def addUnexpectedSuccess(self, test):  # type: ignore[no-untyped-def]
        super().addUnexpectedSuccess(test)
        self._emit(test, "failed")


class _Runner(unittest.TextTestRunner):
    resultclass = _Result  # type: ignore[assignment]


def main() -> int:
    program = unittest.main(module=None, argv=["python -m unittest", *sys.argv[1:]], testRunner=_Runner,
                            exit=False)
    result = program.result
    code = 0 if result.wasSuccessful() and result.testsRun else 1
    channel.emit({"k": "end", "exit": code, "ran": result.testsRun})
    return code


if __name__ == "__main__":
    sys.exit(main())
