"""The offline engine on one-statement bugs injected into real PyPI libraries, fetched at benchmark time.

For each bug below: the library's sdist (pinned, tests included) is fetched with pip into a temp dir, the
one line is changed, the result committed as a git repo; pytest on the host names a failing test and
gives the traceback; `run_job` (engine offline, `--test` = that test) runs on real Docker. Per bug it
prints whether a verified diff came out, how many candidates were checked, the seconds, the rank of the
injected line under the coverage localization (host-side harness run, same code as in the box), and
whether the verified file equals the upstream one (same AST, `len(x) >= k` read as `len(x) > k - 1`,
an `except` tuple in any order).
A verified diff that differs from upstream is counted as verified-but-wrong. Nothing fetched is kept.
Lines that run only at import time are outside every test's coverage, so they get no rank.

    PATCHER_SANDBOX_IMAGE=… .venv/bin/python -m bench.injected [--only LIB] [--limit N] [--bug N] [--before]

With --before each bug runs twice, first with the checks as before issue 28 (cold, one box, the
whole suite: checks_before), then as now, so the two checks-per-second figures come from one run.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from patcher.config import SandboxConfig
from patcher.intake import parse_traceback
from patcher.pipeline import JobSpec, run_job
from patcher.repair import Checker, ochiai, rank_of

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
TABULATE_SUITE = ("python -m pytest -q test/test_input.py test/test_output.py test/test_internal.py test/test_api.py "
                  "test/test_regression.py test/test_textwrapper.py")
"""tabulate's suite without its CLI tests, which start subprocesses that outlive the box's deadline."""
LIBS = {"inflection": "inflection==0.5.1", "toolz": "toolz==0.12.1", "more_itertools": "more-itertools==10.2.0",
        "idna": "idna==3.7", "tabulate": "tabulate==0.9.0"}


@dataclass(frozen=True)
class Bug:
    lib: str
    path: str
    old: str
    """The upstream text (must occur once in the file)."""
    new: str
    kind: str
    test: str | None = None
    """The failing test to reproduce with (else the first that fails; some fail only in a subprocess)."""
    suite: str | None = None
    """The suite to pass (else patcher's default, the whole of `python -m pytest -q`)."""


BUGS = [
    Bug("toolz", "toolz/itertoolz.py", "return seq[-n:]", "return seq[-n + 1:]", "slice bound"),
    Bug("toolz", "toolz/itertoolz.py", "return itertools.islice(seq, n, None)",
        "return itertools.islice(seq, n + 1, None)", "off-by-one"),
    Bug("toolz", "toolz/itertoolz.py", "return itertools.islice(seq, 0, None, n)",
        "return itertools.islice(seq, 1, None, n)", "constant"),
    Bug("toolz", "toolz/itertoolz.py", "            if item in seen:\n                return False",
        "            if item not in seen:\n                return False", "comparison"),
    Bug("toolz", "toolz/itertoolz.py", "return len(seq) == len(set(seq))", "return len(seq) != len(set(seq))",
        "comparison"),
    Bug("toolz", "toolz/itertoolz.py", "if len(ind) > 1:", "if len(ind) > 2:", "off-by-one"),
    Bug("toolz", "toolz/itertoolz.py", "return itertools.chain([el], seq)", "return itertools.chain(seq, [el])",
        "swapped arguments"),
    Bug("toolz", "toolz/itertoolz.py", "        d[item] += 1\n    return dict(d)",
        "        d[item] -= 1\n    return dict(d)", "operator"),
    Bug("inflection", "inflection/__init__.py", "if singular[0].upper() == plural[0].upper():",
        "if singular[0].upper() != plural[0].upper():", "comparison"),
    Bug("inflection", "inflection/__init__.py", "return string[0].lower() + camelize(string)[1:]",
        "return string[0].lower() + camelize(string)[2:]", "slice bound"),
    Bug("inflection", "inflection/__init__.py", "string = re.sub(r'%s{2,}' % re_sep, separator, string)",
        "string = re.sub(separator, r'%s{2,}' % re_sep, string)", "swapped arguments"),
    Bug("inflection", "inflection/__init__.py", "if number % 100 in (11, 12, 13):",
        "if number % 100 not in (11, 12, 13):", "comparison"),
    Bug("more_itertools", "more_itertools/more.py", "return last(islice(iterable, n + 1), default=default)",
        "return last(islice(iterable, n), default=default)", "off-by-one"),
    Bug("more_itertools", "more_itertools/more.py", "                if len(chunk) != n:",
        "                if len(chunk) == n:", "comparison"),
    Bug("more_itertools", "more_itertools/more.py", "yield tuple(chain(window, repeat(fillvalue, n - size)))",
        "yield tuple(chain(window, repeat(fillvalue, size - n)))", "swapped operands"),
    Bug("more_itertools", "more_itertools/more.py", "        return islice(interleave(repeat(e), iterable), 1, None)",
        "        return islice(interleave(repeat(e), iterable), 0, None)", "constant"),
    Bug("more_itertools", "more_itertools/more.py", "except (IndexError, TypeError, StopIteration):",
        "except (TypeError, StopIteration):", "narrowed except"),
    Bug("idna", "idna/core.py", "    if len(label) > 63:\n        return False",
        "    if len(label) > 64:\n        return False", "off-by-one"),
    Bug("idna", "idna/core.py", "    if label[2:4] == '--':", "    if label[1:3] == '--':", "slice bound"),
    Bug("idna", "idna/core.py", "    if unicodedata.category(label[0])[0] == 'M':",
        "    if unicodedata.category(label[-1])[0] == 'M':", "constant"),
    Bug("idna", "idna/core.py", "if label[0] == '-' or label[-1] == '-':",
        "if label[0] == '-' and label[-1] == '-':", "operator"),
    Bug("inflection", "inflection/__init__.py", 'return "{}{}".format(number, ordinal(number))',
        'return "{}{}".format(ordinal(number), number)', "swapped arguments"),
    # issue 28: the kinds the templates lacked, on a library the list did not use yet
    Bug("tabulate", "tabulate/__init__.py", '    index = None\n    if hasattr(tabular_data, "keys")',
        '    if hasattr(tabular_data, "keys")', "missing initialisation",
        "test/test_input.py::test_iterable_of_iterables", TABULATE_SUITE),
    Bug("tabulate", "tabulate/__init__.py", "if chunks and self._len(chunks[-1]) > width:",
        "if self._len(chunks[-1]) > width:", "missing bounds condition", None, TABULATE_SUITE),
    Bug("tabulate", "tabulate/__init__.py", 'tablefmt = _table_formats.get(tablefmt, _table_formats["simple"])',
        'tablefmt = _table_formats.get(tablefmt, _table_formats["simpel"])', "wrong key",
        "test/test_input.py::test_iterable_of_iterables", TABULATE_SUITE),
    Bug("tabulate", "tabulate/__init__.py", "rowaligns = _expand_iterable(rowalign, len(rows), ra_default)",
        "rowaligns = _expand_iterable(len(rows), rowalign, ra_default)", "swapped arguments, crash later",
        "test/test_input.py::test_iterable_of_iterables", TABULATE_SUITE),
]


def fetch(spec: str, into: Path) -> Path:
    """The library's sdist unpacked under `into` (pip's configured index; no install, no dependencies)."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", spec,
                    "-d", str(into)], check=True, capture_output=True)
    archive = next(into.glob("*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return next(p for p in into.iterdir() if p.is_dir())


def pytest(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no", *args]
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def inject(pristine: Path, bug: Bug, dest: Path) -> Path | None:
    """A git repo of the library with the bug, or None when the text is not found exactly once."""
    subprocess.run(["cp", "-r", str(pristine), str(dest)], check=True)
    path = dest / bug.path
    text = path.read_text()
    if text.count(bug.old) != 1:
        return None
    path.write_text(text.replace(bug.old, bug.new))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "injected"]):
        subprocess.run([*GIT, *args], cwd=dest, check=True)
    return dest


def true_line(pristine: Path, bug: Bug) -> int:
    text = (pristine / bug.path).read_text()
    start = text.index(bug.old)
    first_changed = next(i for i, (a, b) in enumerate(zip(bug.old, bug.new, strict=False)) if a != b)
    return text.count("\n", 0, start + first_changed) + 1


def localization_rank(repo: Path, bug: Bug, line: int, failing: set[str]) -> int | None:
    out = repo.parent / f"{repo.name}.cov.json"
    harness = f'exec(open("{ROOT / "sandbox/linecov.py"}").read())'
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run([sys.executable, "-c", harness, str(out), "--", "-q", "-p", "no:cacheprovider"], cwd=repo,
                   env=env, capture_output=True, timeout=600)
    return rank_of(ochiai(json.loads(out.read_text())["tests"], failing), bug.path, line) if out.exists() else None


def run_bug(pristine: Path, bug: Bug, work: Path, image: str) -> dict[str, object]:
    repo = inject(pristine, bug, work / "repo")
    if repo is None:
        return {"status": "bad bug text"}
    base = pytest(repo)
    parsed = parse_traceback(base.stdout)
    if base.returncode != 1 or not parsed.failing_tests:
        return {"status": "no failing test"}
    test = bug.test or parsed.failing_tests[0]
    traceback = pytest(repo, test).stdout  # that test's own traceback (the suite's last one may be another's)
    line = true_line(pristine, bug)
    rank = localization_rank(repo, bug, line, set(parsed.failing_tests))
    started = time.monotonic()
    command = f"python -m pytest -q {shlex.quote(test)}"
    result = run_job(JobSpec(repo=str(repo), traceback=traceback, test_command=command, engine="offline",
                             suite_command=bug.suite,
                             offline_budget_s=300, trace_dir=work / "runs",
                             sandbox=SandboxConfig(image=image, test_timeout_s=300)))
    seconds = time.monotonic() - started
    correct = None
    if result.status == "verified" and result.diff:
        subprocess.run(["git", "apply"], cwd=repo, input=result.diff, text=True, check=True)
        fixed, upstream = (repo / bug.path).read_text(), (pristine / bug.path).read_text()
        correct = same_code(fixed, upstream)
    search = result.agent.search or {}
    check_s = search.get("check_seconds")
    row = {"status": result.status, "reason": result.reason, "checks": result.agent.candidates_tried,
           "seconds": round(seconds, 1), "check_s": check_s, "stopped": search.get("stopped"),
           "suite_runs": search.get("suite_runs"), "rank": rank, "correct": correct,
           "template": result.message.split(" at ")[0].split("(")[-1] if result.status == "verified" else None}
    if correct is False or result.status == "error" or result.reason == "not_reproduced":
        row["detail"] = result.diff if correct is False else result.message  # to judge it by eye
    return row


class _Equivalent(ast.NodeTransformer):
    """`len(x) >= k` → `len(x) > k - 1`, `len(x) <= k` → `len(x) < k + 1` (ints: the same test), and the
    names of an `except (…)` tuple sorted (a handler matches the same exceptions in any order)."""

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.type, ast.Tuple):
            node.type.elts.sort(key=ast.dump)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        right = node.comparators[0] if len(node.ops) == 1 else None
        left_is_len = isinstance(node.left, ast.Call) and getattr(node.left.func, "id", None) == "len"
        if left_is_len and isinstance(right, ast.Constant) and type(right.value) is int:
            if isinstance(node.ops[0], ast.GtE):
                return ast.Compare(node.left, [ast.Gt()], [ast.Constant(right.value - 1)])
            if isinstance(node.ops[0], ast.LtE):
                return ast.Compare(node.left, [ast.Lt()], [ast.Constant(right.value + 1)])
        return node


def same_code(fixed: str, upstream: str) -> bool:
    """Equal ASTs, after the equivalence rewrites above (anything else counts as different)."""
    norm = _Equivalent()
    return ast.dump(norm.visit(ast.parse(fixed))) == ast.dump(norm.visit(ast.parse(upstream)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="one library")
    ap.add_argument("--limit", type=int, help="first N bugs")
    ap.add_argument("--bug", type=int, action="append", help="only bug N (1-based, repeatable)")
    ap.add_argument("--before", action="store_true",
                    help="also run each bug with the checks as before issue 28 (cold, one box, whole suite) first")
    args = ap.parse_args()
    image = os.environ.get("PATCHER_SANDBOX_IMAGE") or "patcher-sandbox:latest"
    bugs = [(i, b) for i, b in enumerate(BUGS, 1) if (not args.only or b.lib == args.only)
            and (not args.bug or i in args.bug)][: args.limit]
    rows: dict[str, list[dict[str, object]]] = {"before": [], "now": []}
    with tempfile.TemporaryDirectory(prefix="bench-injected-") as tmp:
        pristine = {lib: fetch(LIBS[lib], Path(tmp) / lib) for lib in dict.fromkeys(b.lib for _, b in bugs)}
        for n, bug in bugs:
            for how in ("before", "now") if args.before else ("now",):
                work = Path(tmp) / f"bug{n}-{how}"
                work.mkdir()
                with checks_before() if how == "before" else contextlib.nullcontext():
                    row = {"bug": n, "lib": bug.lib, "kind": bug.kind, **run_bug(pristine[bug.lib], bug, work, image)}
                rows[how].append(row)
                print(json.dumps({"checks_as": how, **row} if args.before else row), flush=True)
    for how in ("before", "now") if args.before else ("now",):
        print(f"-- checks as {how}:" if args.before else "", end="\n" if args.before else "")
        summarize(rows[how])


@contextlib.contextmanager
def checks_before() -> Iterator[None]:
    """The offline engine's checks as they were before issue 28: each a cold `run_tests` (no warm
    interpreter), on one box, a surviving candidate's suite run whole (no coverage selection)."""
    class Cold(Checker):
        def __init__(self, box: object, warm: bool = True) -> None:
            super().__init__(box, False)  # type: ignore[arg-type]

    with (mock.patch("patcher.repair.search.Checker", Cold), mock.patch("patcher.repair.search.lane_count", lambda: 1),
          mock.patch("patcher.repair.select.Selection.tests", lambda *a, **k: None)):
        yield


def summarize(rows: list[dict[str, object]]) -> None:
    tried = [r for r in rows if r["status"] in ("verified", "not_verified", "error")]
    fixed = [r for r in tried if r["status"] == "verified" and r["correct"]]
    wrong = [r for r in tried if r["status"] == "verified" and not r["correct"]]
    ranks = [r["rank"] for r in tried if isinstance(r["rank"], int)]
    times = [r["seconds"] for r in fixed if isinstance(r["seconds"], float)]
    timed = [r for r in tried if isinstance(r.get("check_s"), float | int) and r["check_s"]]
    checks = sum(int(str(r["checks"])) for r in timed)
    check_s = sum(float(str(r["check_s"])) for r in timed)
    kinds: dict[str, list[int]] = {}
    for r in tried:
        kinds.setdefault(str(r["kind"]), [0, 0, 0])[0] += 1
        kinds[str(r["kind"])][1] += r in fixed
        kinds[str(r["kind"])][2] += r in wrong
    for kind, (n, ok, bad) in sorted(kinds.items()):
        print(f"  {kind:<24} fixed {ok}/{n}  wrong {bad}")
    print(f"fixed correctly: {len(fixed)}/{len(tried)} bugs over {len({r['lib'] for r in tried})} libraries; "
          f"verified but wrong: {len(wrong)}; true line found by localization: {len(ranks)}/{len(tried)}, "
          f"median rank {statistics.median(ranks) if ranks else '-'}; "
          f"median time to a fix {statistics.median(times) if times else '-'} s; "
          f"checks per second {checks / check_s if check_s else 0:.2f} ({checks} checks in {check_s:.1f} s, "
          f"{1000 * check_s / checks if checks else 0:.0f} ms per check)")


if __name__ == "__main__":
    main()
