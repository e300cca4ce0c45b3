"""Why a test command did not run its tests on the base code, read from the run, and what to do about it.

The reproduction that errors on the base (a module that is not installed, a fixture no plugin provides, a
collection error, a syntax error under the box's Python, a test id that names nothing) would otherwise end
as "did not fail on the base code". The output is the code under test's: it is only quoted (one line, cut
short), never acted on. The first recognised cause wins, in the order below.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from patcher.verify.testruns import TestRun

_QUOTE = 160
_PIP_NAMES = {"yaml": "PyYAML", "PIL": "Pillow", "cv2": "opencv-python", "sklearn": "scikit-learn",
              "bs4": "beautifulsoup4", "dateutil": "python-dateutil", "dotenv": "python-dotenv", "jwt": "PyJWT",
              "Crypto": "pycryptodome", "OpenSSL": "pyOpenSSL", "serial": "pyserial", "magic": "python-magic",
              "google.protobuf": "protobuf", "attr": "attrs", "pkg_resources": "setuptools"}
_FIXTURE_PLUGINS = {"mocker": "pytest-mock", "benchmark": "pytest-benchmark", "freezer": "pytest-freezer",
                    "httpx_mock": "pytest-httpx", "requests_mock": "requests-mock", "event_loop": "pytest-asyncio",
                    "snapshot": "syrupy", "faker": "Faker", "fs": "pyfakefs", "datadir": "pytest-datadir",
                    "httpserver": "pytest-httpserver", "aioresponses": "aioresponses", "client": "pytest-django",
                    "db": "pytest-django", "rf": "pytest-django", "settings": "pytest-django",
                    "celery_app": "celery", "capture_logs": "structlog", "xprocess": "pytest-xprocess"}

_NO_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '(?P<name>[\w.]+)'")
_NO_FIXTURE = re.compile(r"fixture '(?P<name>\w+)' not found")
_CANNOT_IMPORT = re.compile(r"ImportError: (?P<what>cannot import name .*)")
_SYNTAX = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:.*\n){1,4}?.*?'
                     r"(?P<kind>SyntaxError|IndentationError|TabError): (?P<msg>.*)")
_COLLECTING = re.compile(r"_ ERROR collecting (?P<path>\S+) _[\s\S]*?^E?\s*(?P<exc>[\w.]+(?:Error|Exception)\b.*)$",
                         re.MULTILINE)
_UNITTEST_IMPORT = re.compile(
    r"ImportError: Failed to import test module: (?P<module>\S+)[\s\S]*?^(?P<exc>\w+Error: .*)$", re.MULTILINE)
_NOT_FOUND = re.compile(r"ERROR: (?:not found|found no collectors for): (?P<what>\S+)")
_NOTHING = re.compile(r"^(?:no tests ran|collected 0 items)\b|^Ran 0 tests\b", re.MULTILINE)


def not_reproduced(run: TestRun | None, command: str, exc_type: str | None, site: tuple[str, str] | None,
                   repo_files: Collection[str] = ()) -> str:
    """The `not_reproduced` message: what the reproduction did on the base instead, why, and what to do."""
    cause = why_not_run(run, repo_files) if run else None
    raised = _raised(run) if run else ""
    outcome = run.outcome if run else "not_run"
    if cause and not raised:  # nothing raised inside a test: it errored before (collection, setup, a bad id)
        return f"`{command}` did not run its test on the base code: {cause}"
    if run is None or run.outcome != "failed":
        return f"`{command}` did not fail on the base code (outcome: {outcome}); the crash does not reproduce"
    wanted = (f" {exc_type}" if exc_type else "") + (f" raised through {site[0]} in {site[1] or '?'}" if site else "")
    return (f"`{command}` failed on the base code, but not with{wanted}" + (f" ({raised})" if raised else "")
            + (f": {cause}" if cause else "; the crash does not reproduce"))


def _raised(run: TestRun) -> str:
    """What the first failing test raised, and where, as the harness saw it."""
    stream = run.stream
    failures = [f for test in sorted(run.failed) for f in (stream.failures.get(test, []) if stream else []) if f.exc]
    if not failures:
        return ""
    first = failures[0]
    where = f" through {first.frames[-1][0]} in {first.frames[-1][1]}" if first.frames else " outside the repository"
    return f"it raised {_one_line(first.exc)}{where}"


def why_not_run(run: TestRun, repo_files: Collection[str] = ()) -> str | None:
    """One sentence: what stopped the run's tests, and what to do; None when the output tells nothing known."""
    if run.timed_out:
        return ("it did not finish within the test deadline; a test that waits on a network or a server cannot "
                "run in the box")
    if run.output_tail.startswith("refused:"):
        return f"the command itself was {_one_line(run.output_tail)}"
    if run.exit_code == -9:  # the box's runner reports a signal as the negative exit code
        return ("its process was killed (signal 9), in the box most often by the memory limit (SandboxConfig."
                "memory_mb): a test that runs away with memory")
    text = run.failure_text
    for reader in _READERS:
        if found := reader(text, repo_files):
            return found
    return None


def _missing_module(text: str, repo_files: Collection[str]) -> str | None:
    if not (m := _NO_MODULE.search(text)):
        return None
    name = m["name"]
    top = name.split(".")[0]
    ours = any(f.startswith((f"{top}/", f"src/{top}/")) or f in (f"{top}.py", f"src/{top}.py") for f in repo_files)
    if ours:
        return (f"importing raised `No module named '{name}'`, the repository's own `{top}`: the project is not "
                "installed in the environment (a pyproject.toml or setup.py the setup step installs, or "
                "`--setup \"pip install -e .\"`)")
    package = _PIP_NAMES.get(name) or _PIP_NAMES.get(top) or top
    return (f"importing raised `No module named '{name}'`: the package is not in the environment; add "
            f"`{package}` to the test requirements (or pass `--setup \"pip install {package}\"`)")


def _missing_fixture(text: str, repo_files: Collection[str]) -> str | None:
    if not (m := _NO_FIXTURE.search(text)):
        return None
    name = m["name"]
    plugin = _FIXTURE_PLUGINS.get(name)
    where = (f"it comes from the pytest plugin `{plugin}`: add it to the test requirements" if plugin else
             "no installed plugin or conftest.py defines it: add the plugin that does to the test requirements")
    return f"pytest found no fixture `{name}`; {where}"


def _syntax(text: str, repo_files: Collection[str]) -> str | None:
    if not (m := _SYNTAX.search(text)):
        return None
    where = _relative(m["file"], repo_files)
    return (f"`{where}` line {m['line']} does not parse under the box's Python ({m['kind']}: {_one_line(m['msg'])}): "
            "the code may need another Python version")


def _cannot_import(text: str, repo_files: Collection[str]) -> str | None:
    if not (m := _CANNOT_IMPORT.search(text)):
        return None
    return (f"importing raised `ImportError: {_one_line(m['what'])}`: an installed package may be of another "
            "version than the code expects (pin it in the test requirements)")


def _collection(text: str, repo_files: Collection[str]) -> str | None:
    if m := _COLLECTING.search(text):
        return f"collecting `{m['path']}` raised `{_one_line(m['exc'])}`"
    if m := _UNITTEST_IMPORT.search(text):
        return f"unittest could not import `{m['module']}`: `{_one_line(m['exc'])}`"
    return None


def _not_found(text: str, repo_files: Collection[str]) -> str | None:
    if m := _NOT_FOUND.search(text):
        return f"pytest found no test `{_one_line(m['what'])}`: check the test's id (file, class and function)"
    if _NOTHING.search(text):
        return "no test was collected: check the command's paths and the test file's name"
    return None


_READERS: list[Callable[[str, Collection[str]], str | None]] = [
    _missing_module, _missing_fixture, _syntax, _cannot_import, _collection, _not_found]


def _relative(path: str, repo_files: Collection[str]) -> str:
    """A path in the box as the repository names it (the longest repo file it ends with), else as it is."""
    path = path.replace("\\", "/")
    inside = [f for f in repo_files if path == f or path.endswith("/" + f)]
    return max(inside, key=len) if inside else _one_line(path)


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _QUOTE else text[: _QUOTE - 1] + "…"
