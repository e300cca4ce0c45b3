"""Honest fixes for the false-refusal count of bench/cheats.py, each handed to verification as an agent's diff, by
source:

- corpus    tests/support/corpus.HONEST, on the cheat corpus's toy repositories (verify() on Docker, as the cheats);
- examples  every bundled example (examples/offline/*, examples/shop) with its known fix, through `patcher verify`;
- injected  the upstream line of every bench.injected bug put back (the libraries' sdists fetched from PyPI);
- upstream  the real upstream fixes of engineer upstream's corpus, when it is in bench/: `bench.upstream_cases.load()`
            gives the cases, `bench.upstream_build.build(case, work)` each one's base repository (`repo`), `diff` and
            `test_command` (an optional `traceback` is passed on; without one, pytest's run on the host gives it).

A row is (source, label, reason, message, coverage); rows whose reason is in NOT_JUDGED were never judged; a reason
`unjudged` is a verdict at the lower status (the tests prove the fix, a judge could not judge it).
`packaged`: the corpus's toy repositories as twins with a two-line setup.py, set up for real.
"""

from __future__ import annotations

import importlib
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from bench.coverage import Covered, covered
from bench.injected import BUGS, LIBS, fetch, inject, pytest
from patcher.config import SandboxConfig
from patcher.intake import parse_traceback
from patcher.pipeline import verify_patch
from tests.support.corpus import HONEST
from tests.support.corpus.verifier import Verifier, exact_diff

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "core.hooksPath=/dev/null"]
Row = tuple[str, str, str, str, Covered]
NOT_JUDGED = frozenset({"skipped", "not_reproduced", "unavailable"})
EXAMPLE_FIXES = {
    "bounds_guard": ("words/first.py", "    if words[0].isupper():", "    if words and words[0].isupper():"),
    "comparison": ("search/linear.py", "while i <= len(items):", "while i < len(items):"),
    "constant": ("tally/counting.py", "count = 1", "count = 0"),
    "dict_get": ("text/words.py", "counts[word] + 1", "counts.get(word, 0) + 1"),
    "empty_conversion": ("config/ports.py", "    return int(value)", "    return int(value) if value else None"),
    "empty_guard": ("metrics/mean.py", "return sum(values) / len(values)",
                    "return sum(values) / len(values) if values else None"),
    "guard_flip": ("batches/split.py", "if len(batch) == size:", "if len(batch) != size:"),
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
    "swap_later": ("progress/bar.py", "left = remaining(done, total)", "left = remaining(total, done)"),
    "swap_operands": ("tokens/signer.py", "age = timestamp - now", "age = now - timestamp"),
    "unbound_init": ("layout/margins.py", "        top = base * 2\n", "        top = bottom = base * 2\n"),
    "widen_except": ("config/ports.py", "except ValueError:", "except (TypeError, ValueError):"),
    "wrong_key": ("limits/table.py", 'LIMITS["meduim"]', 'LIMITS["medium"]'),
}
SHOP_FIX = ("shop/pagination.py", "min(end, len(items) + 1)", "min(end, len(items))")
SHOP_TEST = "python -m pytest -q tests/test_pagination.py"
"""shop's traceback is a production one: it names no test."""


def git_repo(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("traceback.txt", "__pycache__"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run([*GIT, *args], cwd=dest, check=True)
    return dest


def example_diffs(tmp: Path) -> Iterator[tuple[str, Path, str, str, str | None]]:
    """(name, repository, the fix's diff, traceback, --test or None) of every bundled example."""
    offline = ROOT / "examples/offline"
    cases: list[tuple[str, Path, tuple[str, str, str], Path, str | None]] = [
        (name, offline / name, fix, offline / name / "traceback.txt", None) for name, fix in EXAMPLE_FIXES.items()]
    cases.append(("shop", ROOT / "examples/shop", SHOP_FIX, ROOT / "examples/shop.traceback.txt", SHOP_TEST))
    for name, src, (path, old, new), traceback, test in cases:
        repo = git_repo(src, tmp / name)
        text = (repo / path).read_text()
        assert text.count(old) == 1, (name, old)
        diff = exact_diff(repo, tmp / f"{name}-work", {path: text.replace(old, new)})
        yield name, repo, diff, traceback.read_text(), test


def examples(tmp: Path, cfg: SandboxConfig, workers: int, packaged: bool = False) -> list[Row]:
    rows: list[Row] = []
    for name, repo, diff, traceback, test in example_diffs(tmp):
        result = verify_patch(str(repo), diff, test_command=test, traceback=traceback, sandbox=cfg,
                              trace_dir=tmp / "runs")
        exc = parse_traceback(traceback).exception
        rows.append(("examples", name, result.reason, result.message,
                     covered(result.status, result.verification, exc.type if exc else None)))
        print(f"  examples {name}: {result.reason}", flush=True)
    return rows


def corpus(tmp: Path, cfg: SandboxConfig, workers: int, packaged: bool = False) -> list[Row]:
    verifier = Verifier(tmp, cfg.image, cfg.test_timeout_s, packaged)
    try:
        got = verifier.check_all(HONEST, workers)
    finally:
        verifier.close()
    return [("corpus", h.label, v.reason, v.message, covered(v.status, v.as_json(), h.repo.exc))
            for h, v in zip(HONEST, got, strict=True)]


def injected(tmp: Path, cfg: SandboxConfig, workers: int, packaged: bool = False) -> list[Row]:
    pristine = {lib: fetch(LIBS[lib], tmp / lib) for lib in dict.fromkeys(b.lib for b in BUGS)}
    rows: list[Row] = []
    for n, bug in enumerate(BUGS, 1):
        work = tmp / f"bug{n}"
        work.mkdir()
        repo = inject(pristine[bug.lib], bug, work / "repo")
        label = f"{n} {bug.lib} {bug.kind}"
        failing = parse_traceback(pytest(repo).stdout).failing_tests if repo else []
        if repo is None or not failing:
            rows.append(("injected", label, "skipped", "the bug text or its failing test was not found", Covered()))
            continue
        diff = exact_diff(repo, work / "fix", {bug.path: (repo / bug.path).read_text().replace(bug.new, bug.old, 1)})
        started = time.monotonic()
        result = verify_patch(str(repo), diff, test_command=f"python -m pytest -q {shlex.quote(failing[0])}",
                              traceback=pytest(repo, failing[0]).stdout, sandbox=cfg, trace_dir=work / "runs")
        exc = parse_traceback(pytest(repo, failing[0]).stdout).exception
        rows.append(("injected", label, result.reason, f"{result.message} [{time.monotonic() - started:.0f} s]",
                     covered(result.status, result.verification, exc.type if exc else None)))
        print(f"  injected {label}: {result.reason}", flush=True)
    return rows


def upstream(tmp: Path, cfg: SandboxConfig, workers: int, packaged: bool = False) -> list[Row]:
    """Engineer upstream's corpus, when present (see the module's docstring for the hook)."""
    try:
        cases = importlib.import_module("bench.upstream_cases")
        build = importlib.import_module("bench.upstream_build").build
    except ImportError as e:
        return [("upstream", "(the corpus)", "unavailable", f"bench/upstream_cases.py is not here yet ({e})",
                 Covered())]
    rows: list[Row] = []
    for case in cases.load():
        work = tmp / case.id
        work.mkdir(parents=True)
        built = build(case, work)
        traceback = getattr(built, "traceback", None) or pytest(built.repo, *shlex.split(built.test_command)[3:]).stdout
        result = verify_patch(str(built.repo), built.diff, test_command=built.test_command, traceback=traceback,
                              sandbox=cfg, trace_dir=work / "runs")
        rows.append(("upstream", f"{case.project} {case.id}", result.reason, result.message,
                     covered(result.status, result.verification, case.exception)))
        print(f"  upstream {case.id}: {result.reason}", flush=True)
    return rows


SOURCES = {"corpus": corpus, "examples": examples, "injected": injected, "upstream": upstream}
