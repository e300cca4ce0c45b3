"""Whether a setup or a base run failed for the interpreter's sake, so that another Python may do: a build or a
requirement that needs another Python, a standard-library name the chosen one no longer (or not yet) has, syntax
it does not parse. Read from the installer's output or a test run's failure text; one short phrase, or None.

An interpreter reason is never the reported crash itself: the caller passes the traceback's exception line,
and a run that raised just that (the crash reproduced) is not left for another Python.
"""

from __future__ import annotations

import re
import sys

REMOVED = frozenset({
    "imp", "distutils", "asynchat", "asyncore", "smtpd",  # 3.12
    "aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "mailcap", "msilib", "nis", "nntplib",
    "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau", "telnetlib", "uu", "xdrlib", "lib2to3",  # 3.13
    "formatter", "parser", "symbol", "_dummy_thread", "dummy_threading", "macpath",  # 3.10 and before
})
"""Standard-library modules some Python has and a later one removed."""
STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | REMOVED
_NO_MODULE = re.compile(r"No module named '(?P<name>[\w.]+)'")
_NO_ATTRIBUTE = re.compile(r"module '(?P<module>[\w.]+)' has no attribute '(?P<name>\w+)'")
_CANNOT_IMPORT = re.compile(r"cannot import name '(?P<name>\w+)' from '(?P<module>[\w.]+)'")
_SYNTAX = re.compile(r"^\s*(?:E\s+)?(?:SyntaxError|TabError): (?P<what>.+)$", re.M)
_SUBSCRIPT = re.compile(r"TypeError: 'type' object is not subscriptable|unsupported operand type\(s\) for \|: "
                        r"'type' and|TypeError: unhashable type: 'list'.*Literal")
_SETUP = (
    (re.compile(r"requires a different Python|require(?:s)? another Python|requires Python \S+ and the box has"),
     "a requirement needs another Python"),
    (re.compile(r"Getting requirements to build (?:wheel|editable) did not run successfully|"
                r"get_requires_for_build_(?:wheel|editable)|Preparing (?:editable )?metadata \(pyproject\.toml\) "
                r"did not run successfully"), "the project's build did not run there"),
    (re.compile(r"(?:Failed building wheel for|Could not build wheels for|Failed to build) "),
     "a build failed there"),
)


def setup_symptom(output: str) -> str | None:
    """Why a failed setup points at the interpreter, from the installer's output; None when it does not."""
    for pattern, why in _SETUP:
        if pattern.search(output):
            found = import_symptom(output, None)
            return f"{why} ({found})" if found else why
    return import_symptom(output, None)


def import_symptom(text: str, crash_line: str | None) -> str | None:
    """The first failure in `text` that names the interpreter (a standard-library name missing, syntax it does
    not parse), unless it is the crash's own exception line `crash_line`."""
    found = [m for pattern in (_NO_MODULE, _NO_ATTRIBUTE, _CANNOT_IMPORT) for m in pattern.finditer(text)
             if _stdlib(m.groupdict().get("module") or m["name"])]
    found += list(_SYNTAX.finditer(text)) + list(_SUBSCRIPT.finditer(text))
    for m in sorted(found, key=lambda m: m.start()):
        said = m.group(0).strip().removeprefix("E").strip()
        if crash_line and (said in crash_line or crash_line in said):
            continue
        return f"`{said[:160]}`"
    return None


def _stdlib(module: str) -> bool:
    return module.split(".")[0] in STDLIB
