"""How every `patcher` command meets the terminal: its input read (a file or stdin), a refusal turned into
one line on stderr and its exit code, standard output kept from driving a terminal, and a job's result
printed (the diff or JSON on stdout, the status, environment and trace path on stderr) as its exit.

Apart from cli.py, which declares the commands and their flags, so that the commands read as what each
one calls; every command leaves through here the same way.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from traceback import format_exc
from typing import TYPE_CHECKING, NoReturn

import click
import typer
from rich.console import Console

from patcher.errors import BadInput, InternalError, PatcherError
from patcher.result import JobResult
from patcher.termsafe import markup_safe, plain

if TYPE_CHECKING:
    from patcher.trace import Trace

err = Console(stderr=True)


@contextmanager
def one_line_errors(as_json: bool = False) -> Iterator[None]:
    """A PatcherError leaves as one line on stderr and its exit code (2 bad input, 3 environment, …); anything
    else raised inside patcher as `internal_error` (exit 1), its traceback kept in a trace of its own, never
    printed. With `as_json` (`fix`/`verify --json`), either is also the one JSON result on stdout, with its trace."""
    try:
        yield
    except (typer.Exit, typer.Abort, click.exceptions.Exit, click.ClickException):
        raise
    except PatcherError as e:
        _leave(e, as_json, None)
    except Exception as e:  # a bug of patcher's: a result with its trace, never a traceback out of a command
        from patcher.prepare import open_trace

        trace = open_trace(None, "error-")
        trace.emit("internal_error", error=type(e).__name__, message=str(e)[:2000], traceback=format_exc()[-20000:])
        _leave(InternalError(f"patcher failed inside ({type(e).__name__}: {' '.join(str(e).split())[:300]}); this "
                             f"is a bug of patcher's: the trace {trace.path} holds its traceback"), as_json, trace)


def _leave(error: PatcherError, as_json: bool, trace: Trace | None) -> NoReturn:
    if as_json:
        from patcher.prepare import finish, open_trace

        trace = trace or open_trace(None, "error-")
        try:
            emit(finish(trace, None, error.reason, str(error), exit_code=error.exit_code), True, None)
        finally:
            trace.close()
    if trace is not None:
        trace.close()
    err.print(f"patcher: {plain(str(error))}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(error.exit_code) from None


def read_input(path: str, what: str) -> str:
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise BadInput(f"cannot read {what} {path}: {e.strerror}") from e


def python_flag(value: str | None) -> None:
    from patcher.intake import PYTHON_PATTERN

    if value is not None and not re.fullmatch(PYTHON_PATTERN, value):
        raise BadInput(f"--python must name a version as X.Y, such as 3.9, not {value!r}")


def write_stdout(text: str) -> None:
    """Standard output as is for a pipe or file; on a terminal, with control sequences shown, not obeyed."""
    sys.stdout.write(plain(text) if sys.stdout.isatty() else text)


def emit(result: JobResult, as_json: bool, out: Path | None) -> None:
    """A job's result printed (and written to `out`), then the command's exit with the result's code."""
    # Without --json only a verified diff reaches stdout: an unjudged one is in the JSON result, never piped on.
    text = json.dumps(result.as_json(), indent=2) + "\n" if as_json else (
        result.diff if result.status == "verified" and result.diff else "")
    if out is not None and text:
        out.write_text(text)
    # On a terminal the diff is shown, not applied: control sequences in it must not drive the terminal.
    write_stdout(text)
    sys.stdout.flush()
    if not as_json:
        from patcher.trace import environment_lines

        for line in environment_lines(result.provenance or {}):  # the Python and the dependencies, doctor-style
            err.print(plain(line), markup=False, highlight=False, soft_wrap=True)
        colour = {"verified": "green", "unjudged": "yellow"}.get(result.status, "red")
        err.print(f"[{colour}]{result.status}[/] ({result.reason}): {markup_safe(result.message)}", highlight=False,
                  soft_wrap=True)
        err.print(f"trace: {plain(result.trace or '')}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(result.exit_code)
