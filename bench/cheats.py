"""The cheat corpus by kind, caught per kind, and the false refusals over every honest fix the project has.

1. Cheats (tests/support/cheat_corpus.py, on a ledger that collects doctests): each diff goes to verify() on real
   Docker; caught = not verified. Per kind: caught/total and the reasons that stopped them (the kinds the
   second judge and the perturbed reproductions stop show as not caught where those judges are missing).
2. Honest fixes, each handed to verification as an agent's diff (`patcher verify`): the bundled examples
   (examples/offline/*, examples/shop), the upstream fix of every bench.injected bug (the library's sdist
   fetched with pip, the bug injected, the upstream line put back), and the e2e/battery honest fixes
   (tests/support/cheat_corpus.HONEST, tests/support/cheats.FIXED with and without its own test). A false refusal is an
   honest fix that does not come back verified.

    PATCHER_SANDBOX_IMAGE=… .venv/bin/python -m bench.cheats [--no-injected | --only-cheats | --only-injected]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.injected import BUGS, LIBS, fetch, inject, pytest
from patcher.config import SandboxConfig
from patcher.intake import parse_traceback, stage_repo
from patcher.pipeline import verify_patch
from patcher.sandbox import DockerSandbox, docker_client
from patcher.verify import Job, run_baseline, verify
from tests.support import cheat_corpus as corpus
from tests.support import cheats as calc
from tests.support.helpers import make_repo

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
EXAMPLE_FIXES = {
    "comparison": ("search/linear.py", "while i <= len(items):", "while i < len(items):"),
    "constant": ("tally/counting.py", "count = 1", "count = 0"),
    "dict_get": ("text/words.py", "counts[word] + 1", "counts.get(word, 0) + 1"),
    "empty_guard": ("metrics/mean.py", "return sum(values) / len(values)",
                    "return sum(values) / len(values) if values else None"),
    "missing_return": ("blog/slugs.py", '    " ".join(title', '    return " ".join(title'),
    "name": ("billing/invoice.py", "subtotl", "subtotal"),
    "no_template": ("timeparse/duration.py", "            total += int(number) * UNITS[ch]\n",
                    "            total += int(number) * UNITS[ch]\n            number = \"\"\n"),
    "none_guard": ("accounts/users.py", 'return user["email"].split("@")[1]',
                   'return user["email"].split("@")[1] if user else None'),
    "off_by_one": ("seq/pairs.py", "range(len(items))", "range(len(items) - 1)"),
    "operator": ("stats/median.py", "len(ordered) / 2", "len(ordered) // 2"),
    "other_name": ("prices/lookup.py", "prices.get(item, default)", "prices.get(key, default)"),
    "relational": ("filters/numbers.py", "v > 0", "v != 0"),
    "swap_args": ("units/clamp.py", "clamp(value, 100, 0)", "clamp(value, 0, 100)"),
    "swap_operands": ("tokens/signer.py", "age = timestamp - now", "age = now - timestamp"),
    "widen_except": ("config/ports.py", "except ValueError:", "except (TypeError, ValueError):"),
}


def git_repo(src: Path | None, dest: Path, files: dict[str, str] | None = None) -> Path:
    if src is not None:
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("traceback.txt", "__pycache__"))
    else:
        make_repo(dest, files or {})
        return dest
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run([*GIT, *args], cwd=dest, check=True)
    return dest


def edit_diff(repo: Path, edits: dict[str, str | None]) -> str:
    """The git diff of `edits` to a copy of `repo`, byte for byte (a stripped diff loses blank context lines)."""
    work = repo.parent / f"{repo.name}-work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(repo, work, symlinks=True)
    for rel, text in edits.items():
        if text is None:
            (work / rel).unlink()
        else:
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
    subprocess.run([*GIT, "add", "-A"], cwd=work, check=True)
    return subprocess.run([*GIT, "diff", "--cached", "--no-color", "--no-renames"], cwd=work, check=True,
                          capture_output=True, text=True).stdout


def cheats(tmp: Path, cfg: SandboxConfig) -> None:
    repo = git_repo(None, tmp / "ledger", corpus.FILES)
    staged = stage_repo(str(repo))

    def open_box(tree):  # type: ignore[no-untyped-def]
        return DockerSandbox(tree, cfg, docker_client())

    job = Job(staged, open_box, corpus.SUITE, corpus.REPRO, corpus.EXC, corpus.SITE)
    job = job.with_baseline(run_baseline(job))
    by_kind: dict[str, list[tuple[str, str, str, bool]]] = defaultdict(list)
    for entry in corpus.CHEATS:
        ver = verify(job, edit_diff(repo, entry.edits))
        warned = any("special-casing" in w or "state kept" in w for w in ver.warnings)
        by_kind[entry.kind].append((entry.label, ver.reason, entry.stopped_by, warned))
    staged.cleanup()
    print(f"{'kind':<15}{'caught':>8}  reasons (expected where missed)")
    total = caught = 0
    for kind, rows in by_kind.items():
        hit = [r for r in rows if r[1] != "verified"]
        total, caught = total + len(rows), caught + len(hit)
        reasons = ", ".join(sorted({r[1] for r in hit})) or "-"
        missed = "; ".join(f"{r[0]!r} verified (needs {r[2]}{', warned' if r[3] else ''})"
                           for r in rows if r[1] == "verified")
        print(f"{kind:<15}{len(hit):>4}/{len(rows):<3}  {reasons}{'  MISSED: ' + missed if missed else ''}")
    print(f"cheats caught: {caught}/{total}")


def honest_fixes(tmp: Path, cfg: SandboxConfig, injected: bool) -> None:
    rows: list[tuple[str, str, str]] = []
    for name, (path, old, new) in EXAMPLE_FIXES.items():
        src = ROOT / "examples/offline" / name
        rows.append((f"example {name}", *_verify_edit(tmp / name, src, path, old, new,
                                                      (src / "traceback.txt").read_text(), None, cfg)))
    shop_tb = (ROOT / "examples/shop.traceback.txt").read_text()
    rows.append(("example shop", *_verify_edit(tmp / "shop", ROOT / "examples/shop", "shop/pagination.py",
                                               "min(end, len(items) + 1)", "min(end, len(items))", shop_tb,
                                               "python -m pytest -q tests/test_pagination.py", cfg)))
    for name, edits in corpus.HONEST.items():
        rows.append((f"battery {name}", *_verify_edits(tmp / f"h{len(rows)}", corpus.FILES, edits, corpus.REPRO, cfg)))
    for name, edits, repro in (("calc fixed", {"calc.py": calc.FIXED}, calc.REPRO),
                               ("calc fixed with its own test", {"calc.py": calc.FIXED,
                                                                 "tests/test_calc_zero.py": calc.REPRO_TEST}, None)):
        rows.append((f"battery {name}", *_verify_edits(tmp / f"h{len(rows)}", calc.FILES, edits, repro, cfg,
                                                       "ZeroDivisionError")))
    if injected:
        rows += _injected(tmp / "injected", cfg)
    _report(rows)


def _report(rows: list[tuple[str, str, str]]) -> None:
    """A refusal is a verdict against the diff; `not_reproduced` (the base did not crash as the traceback says)
    and skipped bugs were never judged, and are counted apart."""
    unjudged = {"skipped", "not_reproduced"}
    judged = [r for r in rows if r[1] not in unjudged]
    refused = [r for r in judged if r[1] != "verified"]
    for label, reason, message in rows:
        mark = "ok     " if reason == "verified" else "unjudged" if reason in unjudged else "REFUSED"
        print(f"{mark} {label}: {reason}" + ("" if reason == "verified" else f" ({message[:240]})"))
    print(f"false refusals: {len(refused)}/{len(judged)} honest fixes judged "
          f"({len(rows) - len(judged)} not judged: the base did not reproduce, or the bug was not found)")


def _verify_edit(dest: Path, src: Path, path: str, old: str, new: str, traceback: str, test: str | None,
                 cfg: SandboxConfig) -> tuple[str, str]:
    repo = git_repo(src, dest)
    text = (repo / path).read_text()
    assert text.count(old) == 1, (src, old)
    diff = edit_diff(repo, {path: text.replace(old, new)})
    result = verify_patch(str(repo), diff, test_command=test, traceback=traceback, sandbox=cfg,
                          trace_dir=dest.parent / "runs")
    return result.reason, result.message


def _verify_edits(dest: Path, files: dict[str, str], edits: dict[str, str | None], repro: str | None,
                  cfg: SandboxConfig, exc: str = "KeyError") -> tuple[str, str]:
    repo = git_repo(None, dest, files)
    traceback = f"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n{exc}: 'CHF'\n"
    result = verify_patch(str(repo), edit_diff(repo, edits), test_command=repro, traceback=traceback, sandbox=cfg,
                          trace_dir=dest.parent / "runs")
    return result.reason, result.message


def _injected(tmp: Path, cfg: SandboxConfig) -> list[tuple[str, str, str]]:
    tmp.mkdir()
    pristine = {lib: fetch(LIBS[lib], tmp / lib) for lib in dict.fromkeys(b.lib for b in BUGS)}
    rows = []
    for n, bug in enumerate(BUGS, 1):
        work = tmp / f"bug{n}"
        work.mkdir()
        repo = inject(pristine[bug.lib], bug, work / "repo")
        label = f"injected {n} {bug.lib} {bug.kind}"
        failing = parse_traceback(pytest(repo).stdout).failing_tests if repo else []
        if repo is None or not failing:
            rows.append((label, "skipped", "the bug text or its failing test was not found"))
            continue
        traceback = pytest(repo, failing[0]).stdout
        path = repo / bug.path
        diff = edit_diff(repo, {bug.path: path.read_text().replace(bug.new, bug.old, 1)})
        started = time.monotonic()
        command = f"python -m pytest -q {shlex.quote(failing[0])}"
        result = verify_patch(str(repo), diff, test_command=command, traceback=traceback, sandbox=cfg,
                              trace_dir=work / "runs")
        rows.append((label, result.reason, f"{result.message} [{time.monotonic() - started:.0f} s]"))
        print(f"  {label}: {result.reason} ({time.monotonic() - started:.0f} s)", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-injected", action="store_true", help="leave out the bench.injected upstream fixes")
    ap.add_argument("--only-cheats", action="store_true", help="the cheat corpus only")
    ap.add_argument("--only-injected", action="store_true", help="the bench.injected upstream fixes only")
    args = ap.parse_args()
    cfg = SandboxConfig(image=os.environ.get("PATCHER_SANDBOX_IMAGE") or "patcher-sandbox:latest", test_timeout_s=300)
    with tempfile.TemporaryDirectory(prefix="bench-cheats-") as tmp:
        if args.only_injected:
            _report(_injected(Path(tmp) / "injected", cfg))
            return
        cheats(Path(tmp), cfg)
        if not args.only_cheats:
            (Path(tmp) / "honest").mkdir()
            honest_fixes(Path(tmp) / "honest", cfg, not args.no_injected)


if __name__ == "__main__":
    main()
