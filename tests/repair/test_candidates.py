"""Template repair candidates, on real repos in tmp dirs with tracebacks from really running the bug.

The bundled projects under examples/offline/ (one per template, and one no template fixes) are copied
into git repos; their tests are run with pytest in a subprocess for the traceback, and again after the
intended candidate is applied with `git apply`.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from patcher.intake import parse_traceback
from patcher.repair import Candidate, Stats, candidates
from patcher.verify import is_test_path
from tests.support.helpers import git, make_repo
from tests.support.offline import EXAMPLES, example_repo, failing_traceback, run_tests

# template → (file, the line before, the line after) of the fix the example is built for
INTENDED = {
    "off_by_one": ("seq/pairs.py", "for i in range(len(items))]", "for i in range(len(items) - 1)]"),
    "comparison": ("search/linear.py", "while i <= len(items):", "while i < len(items):"),
    "operator": ("stats/median.py", "return ordered[len(ordered) / 2]", "return ordered[len(ordered) // 2]"),
    "name": ("billing/invoice.py", "return round(subtotl * (1 + tax_rate), 2)",
             "return round(subtotal * (1 + tax_rate), 2)"),
    "swap_args": ("units/clamp.py", "return clamp(value, 100, 0)", "return clamp(value, 0, 100)"),
    "dict_get": ("text/words.py", "counts[word] = counts[word] + 1", "counts[word] = counts.get(word, 0) + 1"),
    "none_guard": ("accounts/users.py", None, "if user is None:"),
    "missing_return": ("blog/slugs.py", '" ".join(title.lower().split())', 'return " ".join(title.lower().split())'),
    "empty_guard": ("metrics/mean.py", None, "if not values:"),
    "swap_operands": ("tokens/signer.py", "age = timestamp - now", "age = now - timestamp"),
    "widen_except": ("config/ports.py", "except ValueError:", "except (ValueError, TypeError):"),
    "constant": ("tally/counting.py", "count = 1", "count = 0"),
    "relational": ("filters/numbers.py", "if v > 0]", "return [v for v in values if v != 0]"),
    "other_name": ("prices/lookup.py", "return prices.get(item, default)", "return prices.get(key, default)"),
    "stray_comma": ("notify/bulletin.py", "format_line = make_formatter(prefix),",
                    "format_line = make_formatter(prefix)"),
}


def apply(repo: Path, c: Candidate, check: bool = False) -> subprocess.CompletedProcess[str]:
    argv = ["git", "apply", "--check"] if check else ["git", "apply"]
    return subprocess.run(argv, cwd=repo, input=c.diff, capture_output=True, text=True)


def is_intended(c: Candidate, template: str) -> bool:
    path, before, after = INTENDED[template]
    lines = c.diff.splitlines()
    removed = before is None or any(line.startswith("-") and before in line for line in lines)
    return c.template == template and c.path == path and removed and any(
        line.startswith("+") and line[1:].strip().endswith(after) for line in lines
    )


def repo_frames(text: str, repo: Path) -> list[tuple[str | None, int]]:
    from patcher.intake import innermost_repo_frames, map_frames
    from patcher.repair.site import RepoView

    parsed = map_frames(parse_traceback(text), RepoView(repo).files)
    return [(f.repo_path, f.line) for f in innermost_repo_frames(parsed)]


@pytest.mark.parametrize("template", sorted(INTENDED))
def test_intended_fix_is_a_candidate_and_makes_the_test_pass(template: str, tmp_path: Path) -> None:
    repo = example_repo(template, tmp_path)
    text = failing_traceback(repo)
    assert repo_frames(text, repo) == repo_frames((EXAMPLES / template / "traceback.txt").read_text(), repo)

    found = [c for c in candidates(parse_traceback(text), repo) if is_intended(c, template)]

    assert found, f"no intended {template} fix"
    assert apply(repo, found[0], check=True).returncode == 0
    assert apply(repo, found[0]).returncode == 0
    after = run_tests(repo)
    assert after.returncode == 0, after.stdout


def test_no_template_example_yields_candidates_none_of_which_pass(tmp_path: Path) -> None:
    repo = example_repo("no_template", tmp_path)
    stats = Stats()
    found = list(candidates(parse_traceback(failing_traceback(repo)), repo, stats=stats))
    assert found and stats.generated == len(found) and not stats.limit_reached
    for c in found:
        assert apply(repo, c).returncode == 0
        assert run_tests(repo).returncode == 1, c
        assert subprocess.run(["git", "apply", "-R"], cwd=repo, input=c.diff, text=True).returncode == 0


def test_every_candidate_applies_compiles_and_is_unique(tmp_path: Path) -> None:
    for name in [*sorted(INTENDED), "no_template"]:
        repo = example_repo(name, tmp_path)
        texts = set()
        for c in candidates(parse_traceback((EXAMPLES / name / "traceback.txt").read_text()), repo):
            assert not is_test_path(c.path)
            assert c.diff.startswith(f"diff --git a/{c.path} b/{c.path}\n--- a/{c.path}\n+++ b/{c.path}\n@@ ")
            assert apply(repo, c, check=True).returncode == 0, c
            new = patched(repo, c)
            ast.parse(new)
            assert new == c.new_text
            assert new not in texts
            texts.add(new)


def patched(repo: Path, c: Candidate) -> str:
    assert apply(repo, c).returncode == 0
    new = (repo / c.path).read_bytes().decode()
    git(repo, "checkout", "-q", "--", c.path)
    return new


def test_order_is_deterministic_innermost_frame_first_failing_line_first(tmp_path: Path) -> None:
    repo = example_repo("swap_args", tmp_path)
    parsed = parse_traceback(failing_traceback(repo))
    first, second = list(candidates(parsed, repo)), list(candidates(parsed, repo))
    assert first == second
    flips = [c for c in first if c.last]  # line 3 guards the raise: only its complement, after all the rest
    assert flips and {c.line for c in flips} == {3} and first[-len(flips):] == flips
    lines = [c.line for c in first if not c.last]
    # clamp() raised on line 4: its candidates (4, then neighbour 5) before percent()'s call on line 9
    assert lines[0] in (4, 5) and lines[-1] == 9
    assert max(i for i, n in enumerate(lines) if n != 9) < min(i for i, n in enumerate(lines) if n == 9)
    assert "swap_args" in {c.template for c in first if c.line == 9}


def test_limit_stops_early_and_stats_count(tmp_path: Path) -> None:
    repo = example_repo("swap_args", tmp_path)
    parsed = parse_traceback((EXAMPLES / "swap_args" / "traceback.txt").read_text())
    everything = list(candidates(parsed, repo))
    stats = Stats()
    assert list(candidates(parsed, repo, limit=3, stats=stats)) == everything[:3]
    assert stats.generated == 3 and stats.limit_reached and stats.seconds > 0
    assert list(candidates(parsed, repo, limit=0)) == []


def test_attribute_typo_uses_the_class_attributes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {
        "shapes.py": (
            "class Rect:\n"
            "    def __init__(self, width, height):\n"
            "        self.width, self.height = width, height\n\n"
            "    def area(self):\n"
            "        return self.width * self.hieght  # in square units\n"
        ),
        "tests/test_shapes.py": "from shapes import Rect\n\n\ndef test_area():\n    assert Rect(2, 3).area() == 6\n",
    })
    found = [c for c in candidates(parse_traceback(failing_traceback(repo)), repo) if c.template == "name"]
    assert [c.description for c in found] == ["`.hieght` → `.height`"]
    assert "+        return self.width * self.height  # in square units\n" in found[0].diff
    assert apply(repo, found[0]).returncode == 0
    assert run_tests(repo).returncode == 0


def test_crlf_file_keeps_its_line_endings(tmp_path: Path) -> None:
    test = "from m import half\n\n\ndef test_half():\n    assert half([1, 2, 3, 4]) == [1, 2]\n"
    repo = make_repo(tmp_path / "r", {"tests/test_m.py": test})
    (repo / "m.py").write_bytes(b"def half(xs):\r\n    return xs[: len(xs) / 2]\r\n")
    git(repo, "add", "m.py")
    git(repo, "commit", "-q", "-m", "crlf")
    found = [c for c in candidates(parse_traceback(failing_traceback(repo)), repo) if c.template == "operator"]
    assert found[0].description == "`/` → `//`"
    assert apply(repo, found[0]).returncode == 0
    assert (repo / "m.py").read_bytes() == b"def half(xs):\r\n    return xs[: len(xs) // 2]\r\n"
    assert run_tests(repo).returncode == 0


@pytest.mark.parametrize("link", ["file", "directory"])
def test_symlinked_files_are_skipped(link: str, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "calc.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    repo = make_repo(tmp_path / "r", {"tests/test_calc.py": "from pkg.calc import mean\n\n\ndef test_mean():\n"
                                                            "    assert mean([]) is None\n"}, commit=False)
    if link == "file":
        (repo / "pkg").mkdir()
        (repo / "pkg" / "calc.py").symlink_to(outside / "calc.py")
    else:
        (repo / "pkg").symlink_to(outside)
    text = failing_traceback(repo)
    assert "ZeroDivisionError" in text and "calc.py" in text
    stats = Stats()
    assert list(candidates(parse_traceback(text), repo, stats=stats)) == []
    assert stats.generated == 0


def test_frame_at_a_missing_line_or_file_yields_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"app/core.py": "def f(xs):\n    return xs[0]\n"})
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/core.py", line 999, in f\n'
        '  File "/srv/app/gone.py", line 1, in g\n'
        "IndexError: list index out of range\n"
    )
    stats = Stats()
    assert list(candidates(parse_traceback(text), repo, stats=stats)) == []
    assert stats.frames == 0


EXPAND = '''def expand(original, num_desired, default):
    """`original` padded with `default` up to `num_desired` items."""
    if isinstance(original, list):
        return original + [default] * (num_desired - len(original))
    else:
        return [default] * num_desired


def aligns(rows, align=None, fallback=None):
    return expand(len(rows), align, fallback)
'''


def test_a_none_held_in_a_list_display_is_not_guarded(tmp_path: Path) -> None:
    """`[default] * n` raises on `n` being None, never on `default`: a guard on `default` would only silence
    the crash when both happen to be None (as tabulate's swapped `_expand_iterable` call did)."""
    repo = make_repo(tmp_path / "pad", {"pad.py": EXPAND, "tests/test_pad.py":
                                        "from pad import aligns\n\n\ndef test_aligns():\n"
                                        "    assert aligns([[1], [2]]) == [None, None]\n"})
    text = failing_traceback(repo)
    assert "can't multiply sequence by non-int of type 'NoneType'" in text
    guards = [c for c in candidates(parse_traceback(text), repo) if c.template == "none_guard"]
    assert guards and all("if default is None" not in c.diff for c in guards)
    inner = [c for c in guards if "if num_desired is None" in c.diff]
    assert inner and all(c.last for c in inner)  # every other return builds a list: a None return is tried late


def test_a_none_guard_in_a_function_that_may_return_none_keeps_its_place(tmp_path: Path) -> None:
    repo = example_repo("none_guard", tmp_path)
    found = [c for c in candidates(parse_traceback(failing_traceback(repo)), repo) if is_intended(c, "none_guard")]
    assert found and not any(c.last for c in found)


def test_a_parenthesized_one_tuple_is_meant_and_no_stray_comma_fix_touches_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"m.py": "def pair(x):\n    kept = (x,)\n    return kept(1)\n"})
    crash = ('Traceback (most recent call last):\n  File "m.py", line 3, in pair\n    return kept(1)\n'
             "TypeError: 'tuple' object is not callable\n")
    assert not [c for c in candidates(parse_traceback(crash), repo) if c.template == "stray_comma"]
