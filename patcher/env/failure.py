"""Why a dependency setup failed, in one sentence: the requirement pip stopped at, the file that named it, and
what the index answered (its URL without credentials). Read from the installer's output and the proxy's
record of the index's answers; the output comes from a container that ran build code, so this only points
at lines the user can check, and the lines themselves follow in the error.
"""

from __future__ import annotations

import re

from patcher.env.plan import LOOSE_FILE, PIP_UPGRADE_FAILED, EnvPlan
from patcher.env.testreqs import requirement_name

_FROM_FILE = r"\(from -r (?P<file>\S+) \(line (?P<line>\d+)\)\)"
_NOT_FOUND = re.compile(r"Could not find a version that satisfies the requirement (?P<req>.+?)"
                        rf"(?: {_FROM_FILE})? \(from versions: (?P<versions>[^)]*)\)")
_NO_MATCH = re.compile(r"No matching distribution found for (?P<req>\S+)")
_PYTHON = re.compile(r"Package '(?P<req>[^']+)' requires a different Python: (?P<have>\S+) not in '(?P<want>[^']+)'")
_IGNORED = re.compile(r"Ignored the following versions that require a different python version: (?P<what>.+)")
_BUILD = re.compile(r"(?:Failed building wheel for|Could not build wheels for|Failed to build) (?P<req>[\w.-]+)")
_GETTING = re.compile(r"Getting requirements to build (?:wheel|editable) did not run successfully")
_COLLECTING = re.compile(r"^\s*(?:Collecting|Obtaining) (?P<req>\S+)", re.M)
_CONFLICT = re.compile(r"Cannot install (?P<reqs>.+?) because these package versions have conflicting dependencies")
_VERSION_CONFLICT = re.compile(r"VersionConflict: \((?P<have>[\w.-]+ [^\s(]+) \([^)]*\), "
                               r"Requirement\.parse\('(?P<want>[^']+)'\)(?:, \{'(?P<by>[^']+)'\})?\)")
"""pkg_resources' refusal in a legacy build (an old pip runs setup.py on the box's setuptools, no isolation)."""
_INVALID = re.compile(r"Invalid requirement: '(?P<req>[^']*)'(?: \(from line (?P<line>\d+) of (?P<file>\S+)\))?")
_HTTP = re.compile(r"(?P<code>40[13]) Client Error: [^\n]*? for url: (?P<url>\S+)|HTTP error (?P<code2>40[13]) "
                   r"while getting (?P<url2>\S+)|(?P<code3>401) Error, Credentials not correct for (?P<url3>\S+)")
_REF = re.compile(r"-r (?P<file>\S+) \(line (?P<line>\d+)\)")
_REASONS = {"401": "401 Unauthorized", "403": "403 Forbidden"}


def explain(output: str, plan: EnvPlan, indexes: list[str], answers: list[str]) -> str:
    """One sentence on why the install failed ("" when the output says nothing this recognises); `indexes` are
    URLs without credentials, `answers` the proxy's record of the index's refusals. An install that went on with
    the image's old pip (the index served no newer one) says so: that pip builds a setup.py on the image's
    setuptools, which is often the cause."""
    why = _explain(output, plan, indexes, answers)
    if PIP_UPGRADE_FAILED not in output:
        return why
    old = ("the image's pip (older than 21.3) installed, as the index offered no newer pip: it builds a project's "
           "setup.py on the image's setuptools")
    return f"{why} ({old})" if why else old


def _explain(output: str, plan: EnvPlan, indexes: list[str], answers: list[str]) -> str:
    refused = "; ".join(dict.fromkeys([*answers, *_pip_refusals(output)]))
    shown = ", ".join(indexes) or "the index"
    python = _PYTHON.search(output)
    if python:
        return (f"`{python['req']}` requires Python {python['want']} and the box has {python['have']}"
                f"{_origin(plan, python['req'])}: choose a Python it supports (--python)")
    missing = _NOT_FOUND.search(output) or _NO_MATCH.search(output)
    if missing:
        req = missing["req"].strip()
        where = _origin(plan, req, missing.groupdict().get("file"), missing.groupdict().get("line"))
        versions = (missing.groupdict().get("versions") or "").strip()
        ignored = _IGNORED.search(output)
        if ignored:
            why = f"the versions there require another Python ({ignored['what'].strip()[:200]})"
        elif versions in ("", "none"):
            why = (f"{shown} offers no version of it at all: check the name, that the index serves it (pip's "
                   "index-url or extra-index-url, EnvConfig.index_url) and its credentials (the index URL's "
                   "userinfo or a netrc entry, which the setup proxy adds)")
        else:
            why = f"none of the versions {shown} offers matches ({_short(versions)})"
        answered = f"; the index answered: {refused}" if refused else ""
        return f"no distribution of `{req}`{where} could be installed: {why}{answered}"
    if refused:
        return f"the index refused requests ({refused}) of {shown}: check its credentials"
    conflict = _CONFLICT.search(output)
    if conflict:
        names = [n.strip() for n in re.split(r",| and ", conflict["reqs"]) if n.strip()]
        where = "; ".join(_named(plan, n) for n in names)
        return f"the requirements conflict: {where} cannot be installed together"
    invalid = _INVALID.search(output)
    if invalid:
        place = f" (line {invalid['line']} of {invalid['file']})" if invalid["file"] else _origin(plan, invalid["req"])
        return f"`{invalid['req']}`{place} is not a requirement pip understands"
    clash = _VERSION_CONFLICT.search(output)
    if clash:
        by = f" (for `{clash['by']}`)" if clash["by"] else ""
        return (f"the project's build code needs `{clash['want']}`{by} and the environment has {clash['have']}: "
                "its setup.py ran on the image's setuptools without build isolation; pin what its setup_requires "
                "pulls in (--setup) or give it a pyproject.toml [build-system]")
    built = _BUILD.search(output)
    if built or _GETTING.search(output):
        req = built["req"] if built else _last_collected(output)
        return (f"building `{req}`{_origin(plan, req)} failed (its build code ran in the setup container; its "
                "output follows)") if req else ""
    return ""


def _named(plan: EnvPlan, said: str) -> str:
    """A requirement pip names in a conflict, in the user's terms: `-r FILE (line N)` of a file is that file's line
    (the single requirements' file is patcher's own: the line there names where the requirement was read)."""
    ref = _REF.fullmatch(said)
    if ref is None:
        return f"`{said}`{_origin(plan, said)}"
    file, line = ref["file"], int(ref["line"])
    if file.endswith(LOOSE_FILE) and 0 < line <= len(plan.loose):
        return f"`{plan.loose[line - 1][0]}` (from {plan.loose[line - 1][1]})"
    return f"line {line} of {file.removeprefix('/workspace/repo/')}"


def _origin(plan: EnvPlan, req: str, file: str | None = None, line: str | None = None) -> str:
    """" (from FILE)" for a requirement: the file pip names, our single-requirements file's source line, or
    the places the plan read the project's name."""
    if file and line and file.endswith(LOOSE_FILE) and 0 < int(line) <= len(plan.loose):
        return f" (from {plan.loose[int(line) - 1][1]})"
    if file and not file.endswith(LOOSE_FILE):
        return f" (from {file.removeprefix('/workspace/repo/')}, line {line})" if line else f" (from {file})"
    places = plan.origins.get(requirement_name(req) or "", [])
    return f" (from {', '.join(places)})" if places else ""


def _pip_refusals(output: str) -> list[str]:
    """The index's 401/403 answers as pip reports them (for https the proxy only sees a tunnel)."""
    found = []
    for m in _HTTP.finditer(output):
        code, url = m["code"] or m["code2"] or m["code3"], m["url"] or m["url2"] or m["url3"]
        found.append(f"{_REASONS[code]} for {url.rstrip('.,:;')}")
    return found


def _last_collected(output: str) -> str:
    found = list(_COLLECTING.finditer(output))
    return found[-1]["req"] if found else ""


def _short(versions: str) -> str:
    items = [v.strip() for v in versions.split(",") if v.strip()]
    return ", ".join(items) if len(items) <= 6 else f"{', '.join(items[:3])}, …, {', '.join(items[-2:])}"
