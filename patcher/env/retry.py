"""When the one pip run of a setup fails: installed again the way the project's own tooling would, in the setup
container, before the setup is given up.

1. **tox's order.** tox installs an environment's `deps` in one pip run and the project in another, after them:
   the project's own requirements win, and a deps pin they contradict only draws pip's warning (pyflakes' tox.ini
   pins `flake8==3.6.0`, which wants an older pyflakes than the project; one pip run cannot resolve both). So the
   single requirements (tox deps, tests_require, dependency groups, nox installs) go first, together, else each
   alone; then the requirement files and the project. A single requirement that cannot be installed even alone is
   still a failure, named with its line; one the project's run then contradicts is a warning naming that line.
2. **The project's era.** A `setup.py` project whose build fails under today's build isolation (an editable
   PEP 660 build runs the newest setuptools, which no longer has `pkg_resources`, nor, from 72.0 to 72.1,
   `setuptools.command.test`, both of which old setup.py files import) is installed without isolation, on
   `setuptools<72` and `wheel`, as pip did in its day; failing that, by its own `setup.py develop`
   (`--no-use-pep517`, where the environment's pip still offers it).

Each pip run is reported (`commands` of `provenance.setup`, with its exit code and why it ran), and so are the
warnings; the host reads them from the summary line the driver prints last (`RETRY_MARK`).
"""

from __future__ import annotations

import json
import re
from typing import Any

RETRY_MARK = "PATCHER-RETRIED"
SCRIPT_NAME = "retry.py"
PLAN_NAME = "retry.json"
ERA_TOOLS = ["setuptools<72", "wheel"]
"""The build tools of a setup.py project's era: the last setuptools with `setup.py test` (removed in 72)."""
_CONFLICT = re.compile(r"^(?P<who>\S+ \S+) requires (?P<wants>.+?), but you have (?P<have>.+?) which is "
                       r"incompatible\.?$", re.M)

SCRIPT = f"""\
import json, re, subprocess, sys

plan = json.load(open(sys.argv[1]))
steps, warnings, dropped = [], [], []


def run(args, why):
    shown = "pip install " + " ".join(args)
    print("patcher: " + why + ": " + shown, flush=True)
    done = subprocess.run(plan["pip"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = done.stdout.decode(errors="replace")
    sys.stdout.write(out)
    sys.stdout.flush()
    steps.append({{"command": shown, "why": why, "exit_code": done.returncode}})
    return done.returncode == 0, out


def finish(ok):
    print("{RETRY_MARK} " + json.dumps({{"steps": steps, "warnings": warnings, "dropped": dropped}}), flush=True)
    sys.exit(0 if ok else 1)


loose, own = plan["loose"], plan["own"]
if loose:
    ok, _ = run([item["requirement"] for item in loose], "as tox does: the single requirements first, together")
    if not ok:
        for item in loose:
            alone, _ = run([item["requirement"]], "each single requirement alone")
            if not alone:
                finish(False)
ok, out = False, ""  # without single requirements the one run was this very run
if loose:
    ok, out = run(own, "then the requirement files and the project, whose own requirements win") if own else (True, "")
if not ok and plan["era"]:
    tools, _ = run(plan["era_tools"], "the project's era: its build tools")
    if tools:
        ok, out = run(["--no-build-isolation"] + own, "the project's era: built without isolation")
    if tools and not ok:
        ok, out = run(["--no-build-isolation", "--no-use-pep517"] + own, "the project's era: setup.py develop")
if ok and loose:
    for line in re.findall(r"^\\S+ \\S+ requires .+? which is incompatible\\.?$", out, re.M):
        warnings.append(line)
finish(ok)
"""
"""Runs in the setup container with the environment's Python (3.8 or later) when the one pip run failed."""


def retry_plan(pip: list[str], loose: list[tuple[str, str]], own: list[str], era: bool) -> str:
    """The driver's input: the pip command, the single requirements with where each was read, the project's own
    arguments (requirement files, the project), and whether the era's build may be tried."""
    return json.dumps({"pip": pip, "loose": [{"requirement": r, "from": w} for r, w in loose], "own": own,
                       "era": era, "era_tools": ERA_TOOLS})


def retried_in(log: str, loose: list[tuple[str, str]]) -> dict[str, Any] | None:
    """The driver's report from the setup's output (None when the one run sufficed): its pip runs, and its
    warnings in the user's terms, each conflict naming the requirement line and where it was read."""
    for line in reversed(log.splitlines()):
        if line.startswith(RETRY_MARK + " "):
            try:
                found = json.loads(line.split(" ", 1)[1])
            except ValueError:
                return None
            if not isinstance(found, dict):
                return None
            said = [str(w) for w in found.get("warnings") or []]
            return {"steps": [s for s in found.get("steps") or [] if isinstance(s, dict)],
                    "warnings": [conflict_warning(w, loose) for w in said]}
    return None


def conflict_warning(pip_line: str, loose: list[tuple[str, str]]) -> str:
    """pip's "X 1.0 requires Y<2, but you have Y 2.1 which is incompatible" as the user's own line: which single
    requirement it is, where it was read, and that the project's requirements won, as under tox."""
    m = _CONFLICT.match(pip_line.strip())
    if not m:
        return pip_line
    name = m["who"].split()[0].lower().replace("_", "-")
    line = next(((r, w) for r, w in loose if re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].lower().replace("_", "-")
                 == name), None)
    named = f"`{line[0]}` ({line[1]})" if line else f"`{m['who']}`"
    return (f"{named} was installed before the project, as tox installs deps, and the project's own requirements "
            f"then won: {m['who']} requires {m['wants']}, but the environment has {m['have']}; tests that use it "
            "may fail (pin it to a release that fits, or install another way with --setup or [tool.patcher] setup)")
