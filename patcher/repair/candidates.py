"""Repair without a model: one-statement fix candidates from fix templates (SapFix/TBar style).

`candidates(parsed, repo)` walks the traceback's repo frames innermost first, then their callers; in a
frame the failing line, then its neighbours (±1, ±2, inside the same function); on each line every
template in `TEMPLATES` order. When the innermost repo frame is a test (an assertion failed there),
the bodies of the repo functions called on its failing line come next, then the top lines of a coverage
ranking (`suspects`, patcher/repair/localize.py) when there is one. The failing line's sources
(repair/dataflow.py) come in the order it reads their names, those a crash report's local variables show
holding the bad value first (repair/suspects.py). With a ranking, candidates are then sorted by the line's
score × the template's prior (its place in `TEMPLATES`), ties by the line's place in the ranking. Each
candidate is a git-style diff against the file as it is in `repo`; one whose result does
not compile, that repeats an earlier result, that would edit a test file, that silences the reported
exception (deletes or weakens the raise it came from, or catches and discards it: repair/suppress.py)
or that makes a branch dead (repair/dead.py) is dropped. One that turns the raise's guard into its
complement is kept but tried late (it may offset a bug made elsewhere). Pure host-side: reads files, runs nothing.
"""

from __future__ import annotations

import ast
import hashlib
import heapq
import re
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from patcher.intake import ExceptionInfo, Frame, ParsedTraceback, map_frames
from patcher.repair.dataflow import feeding_lines
from patcher.repair.dead import makes_dead_branch
from patcher.repair.edits import git_diff
from patcher.repair.found import Candidate, Stats
from patcher.repair.library_bugs import bounds_guard, unbound_init, wrong_key
from patcher.repair.names import wrong_name
from patcher.repair.noneguards import empty_guard, missing_return, none_guard
from patcher.repair.patterns import constant, other_name, relational, swap_operands, widen_except
from patcher.repair.region import changed_region
from patcher.repair.site import Fix, RepoView, Site, innermost
from patcher.repair.suppress import RaiseSite, guard_flipped, raise_site, suppression
from patcher.repair.suspects import suspicious_names
from patcher.repair.templates import comparison, dict_get, off_by_one, operator_swap, stray_comma, swap_args
from patcher.verify import is_test_or_config

TEMPLATES: tuple[tuple[str, Callable[[Site], Iterator[Fix]]], ...] = (
    ("name", wrong_name),
    ("stray_comma", stray_comma),
    ("unbound_init", unbound_init),
    ("wrong_key", wrong_key),
    ("dict_get", dict_get),
    ("missing_return", missing_return),
    ("none_guard", none_guard),
    ("comparison", comparison),
    ("off_by_one", off_by_one),
    ("operator", operator_swap),
    ("swap_args", swap_args),
    ("empty_guard", empty_guard),
    ("bounds_guard", bounds_guard),
    ("swap_operands", swap_operands),
    ("widen_except", widen_except),
    ("relational", relational),
    ("constant", constant),
    ("other_name", other_name),
)
PRIOR = {name: 1.0 - 0.02 * i for i, (name, _) in enumerate(TEMPLATES)}
"""Earlier templates fit more of the bugs they were built for; a small tilt, the localization dominates."""
FLIP_FACTOR = 0.5
"""A guard flip's score is its line's times this: a fix on the crash line or on what feeds it comes first."""
POOL = 5
"""With a ranking, up to POOL × limit fixes are generated, then sorted, then checked in that order."""
NEIGHBOURS = (0, -1, 1, -2, 2)
MAX_CALLEE_LINES = 60
MAX_SUSPECTS = 30
"""Top-ranked lines of the coverage localization tried besides the traceback's frames."""
_UNSAFE_PATH = re.compile(r'[\x00-\x1f\x7f"\\]')


class Scored(Protocol):
    """A ranked line (patcher.repair.localize.Suspect): repo path, line number, localization score (read-only,
    so a frozen dataclass fits)."""

    @property
    def path(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def score(self) -> float: ...


def candidates(
    parsed: ParsedTraceback, repo: Path, limit: int = 200, stats: Stats | None = None,
    suspects: Sequence[Scored] = (),
) -> Iterator[Candidate]:
    """Fix candidates for the traceback, at most `limit`, in a deterministic order (see module doc)."""
    stats = stats if stats is not None else Stats()
    clock: float | None = time.perf_counter()
    try:
        if limit <= 0:
            stats.limit_reached = True
            return
        view = RepoView(Path(repo))
        parsed = map_frames(parsed, view.files)  # once: the sites, the crash line and the raise read it
        raised = raise_site(parsed, view)
        fixes = _generate(view, parsed, stats, suspects)
        stream = (_ranked(fixes, suspects, limit * POOL, stats, raised, _crash_lines(parsed, view)) if suspects
                  else _last_at_the_end(_checked(fixes, stats, raised)))
        for candidate in stream:
            stats.generated += 1
            stats.seconds += time.perf_counter() - (clock or 0.0)
            clock = None
            yield candidate
            clock = time.perf_counter()
            if stats.generated >= limit:
                stats.limit_reached = True
                return
    finally:
        if clock is not None:
            stats.seconds += time.perf_counter() - clock


def _generate(view: RepoView, parsed: ParsedTraceback, stats: Stats, suspects: Sequence[Scored]
              ) -> Iterator[tuple[Fix, str, str]]:
    """Every template's fixes on every site, in site order, with the file they make: those that edit a
    test file, change nothing or repeat an earlier result dropped here (cheap); not yet compiled or held
    against the reported exception (that costs on a big file: see _candidate)."""
    seen: set[tuple[str, bytes]] = set()
    for site in _sites(view, parsed, stats, suspects):
        for template, make in TEMPLATES:
            for fix in make(site):
                if (new := _new_text(fix, seen, stats)) is not None:
                    yield fix, template, new


def _checked(fixes: Iterator[tuple[Fix, str, str]], stats: Stats, raised: RaiseSite | None
             ) -> Iterator[Candidate]:
    for fix, template, new in fixes:
        if (candidate := _candidate(fix, template, new, stats, raised)) is not None:
            yield candidate


def _ranked(fixes: Iterator[tuple[Fix, str, str]], suspects: Sequence[Scored], pool: int, stats: Stats,
            raised: RaiseSite | None, crash: tuple[str, list[int]] | None = None) -> Iterator[Candidate]:
    """Localization score × pattern prior, best first; ties go to the line ranked first (the ranking has
    broken its own ties: a called function's line may tie with its caller's), then to generation order
    (which also ranks lines the coverage run never saw, such as a traceback frame's neighbour). The line
    that raised (the innermost repository frame outside the tests) ranks as the top line, ahead of its
    ties: coverage spectra favour what only the failing test runs (its callers), the traceback names
    where it broke. So do the lines that compute the values the raising line reads (repair/dataflow.py):
    the bad value is often made a few statements before it is used. The fixes are sorted before they are
    checked, and checked as the search asks for them: on a big file a check costs tens of ms, and a pool
    checked whole before the first candidate cost a search its first minute. A guard flip, known only once
    checked, waits in `held` for its lower place."""
    place = {(s.path, s.line): (s.score, i) for i, s in enumerate(suspects)}
    if crash is not None and suspects:
        for line in crash[1]:
            place[(crash[0], line)] = (max(s.score for s in suspects), -1)
    unseen = (0.0, len(suspects))
    found = [f for _, f in zip(range(pool), fixes, strict=False)]
    keyed = sorted((-score * PRIOR[template], at, i) for i, (fix, template, _) in enumerate(found)
                   for score, at in [place.get((fix.src.path, fix.line), unseen)])
    held: list[tuple[tuple[float, int, int], Candidate]] = []
    for key in keyed:
        while held and held[0][0] < key:
            yield heapq.heappop(held)[1]
        fix, template, new = found[key[2]]
        if (c := _candidate(fix, template, new, stats, raised)) is None:
            continue
        if c.last:
            heapq.heappush(held, ((key[0] * FLIP_FACTOR, key[1], key[2]), c))
        else:
            yield c
    while held:
        yield heapq.heappop(held)[1]


def _last_at_the_end(stream: Iterator[Candidate]) -> Iterator[Candidate]:
    held: list[Candidate] = []
    for c in stream:
        if c.last:
            held.append(c)
        else:
            yield c
    yield from held


def _crash_lines(parsed: ParsedTraceback, view: RepoView) -> tuple[str, list[int]] | None:
    """The line that raised (innermost repo frame outside the tests) and the lines that feed it."""
    frames, exc = _repo_frames(parsed)
    if frames and frames[0].repo_path and not is_test_or_config(frames[0].repo_path):
        src = view.source(frames[0].repo_path)
        first = suspicious_names(frames[0].locals, exc)
        return frames[0].repo_path, [frames[0].line, *(feeding_lines(src, frames[0].line, first) if src else [])]
    return None


def _new_text(fix: Fix, seen: set[tuple[str, bytes]], stats: Stats) -> str | None:
    path = fix.src.path
    if is_test_or_config(path):
        stats.test_files += 1
        return None
    new = fix.src.apply(list(fix.edits))
    if new is None or new == fix.src.text or _UNSAFE_PATH.search(path):
        return None
    key = (path, hashlib.sha256(new.encode()).digest())
    if key in seen:
        stats.duplicates += 1
        return None
    seen.add(key)
    return new


def _candidate(fix: Fix, template: str, new: str, stats: Stats, raised: RaiseSite | None) -> Candidate | None:
    path = fix.src.path
    region = changed_region(fix.src.tree, fix.src.text, new)  # the checks below cost a function, not a file
    old_part, new_part = region or (fix.src.text, new)
    if not _compiles(new_part, path) and (region is None or not _compiles(new, path)):
        stats.not_compiling += 1
        return None
    old_tree = fix.src.tree if region is None else ast.parse(old_part)
    if suppression(raised, path, old_part, new_part):
        stats.suppressing += 1
        return None
    if makes_dead_branch(old_tree, new_part):
        stats.dead += 1
        return None
    return Candidate(path, fix.line, template, fix.description, git_diff(path, fix.src.text, new), new,
                     fix.late or guard_flipped(raised, path, old_part, new_part))


def _compiles(text: str, path: str) -> bool:
    """Parses and compiles (so `continue` outside a loop, `return` outside a function are caught too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def _sites(view: RepoView, parsed: ParsedTraceback, stats: Stats, suspects: Sequence[Scored] = ()
           ) -> Iterator[Site]:
    frames, exc = _repo_frames(parsed)
    done: set[tuple[str, int]] = set()
    for n, frame in enumerate(frames):
        assert frame.repo_path is not None
        src = view.source(frame.repo_path)
        if (frame.repo_path, frame.line) in done or src is None or not 1 <= frame.line <= src.line_count:
            continue
        stats.frames += 1
        func = innermost(src.tree, frame.line, ast.FunctionDef | ast.AsyncFunctionDef)
        lo, hi = (func.lineno, func.end_lineno or func.lineno) if func else (1, src.line_count)  # type: ignore[attr-defined]
        feeding = feeding_lines(src, frame.line, suspicious_names(frame.locals, exc)) if n == 0 else []
        for line in (frame.line, *feeding, *(frame.line + d for d in NEIGHBOURS[1:])):
            if lo <= line <= hi and (src.path, line) not in done:
                done.add((src.path, line))
                stats.sites += 1
                yield Site(src, line, exc, view)
    innermost_path = frames[0].repo_path or "" if frames else ""
    if innermost_path and is_test_or_config(innermost_path) and (src := view.source(innermost_path)):
        yield from _callee_sites(Site(src, frames[0].line, exc, view), done, stats)
    for suspect in suspects[:MAX_SUSPECTS]:
        src = view.source(suspect.path)
        if src and (suspect.path, suspect.line) not in done and suspect.line in src.by_line:
            done.add((suspect.path, suspect.line))
            stats.sites += 1
            yield Site(src, suspect.line, exc, view)


def _callee_sites(test: Site, done: set[tuple[str, int]], stats: Stats) -> Iterator[Site]:
    """Every line of each repo function the failing test line calls (its own code is not to be edited)."""
    names = [c.func.id if isinstance(c.func, ast.Name) else c.func.attr
             for c in test.nodes(ast.Call) if isinstance(c.func, ast.Name | ast.Attribute)]
    for name in dict.fromkeys(names):
        for src, func in test.repo.defs(name):
            if is_test_or_config(src.path) or not func.body:
                continue
            first = func.body[0].lineno
            for line in range(first, min(func.end_lineno or first, first + MAX_CALLEE_LINES - 1) + 1):
                if (src.path, line) not in done and line in src.by_line:
                    done.add((src.path, line))
                    stats.sites += 1
                    yield Site(src, line, test.exc, test.repo)


def _repo_frames(parsed: ParsedTraceback) -> tuple[list[Frame], ExceptionInfo | None]:
    """Repo frames innermost first and their exception; from a chained traceback if the primary has none."""
    for frames, exc in [(parsed.frames, parsed.exception), *reversed(parsed.chain)]:
        if inside := [f for f in reversed(frames) if not f.external and f.repo_path]:
            return inside, exc or parsed.exception
    return [], parsed.exception
