"""The cheat corpus (tests/support/corpus) checked on the host, without Docker, so that it stays honest: each cheat
turns its failing test green under plain pytest, and a held-out input, run outside any test runner, shows it is
no fix (the honest fix answers differently). Each spelling written to get past a syntax rule does (policy,
probes, constructs, hints, run here on its diff). Each toy repository crashes as it says, and every honest fix
passes plain pytest.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from patcher.verify.judges.constructs.hints import diff_hints
from patcher.verify.judges.constructs.probes import find_probes
from patcher.verify.judges.constructs.rules import find_constructs
from patcher.verify.policy.rules import check_diff, check_tree, protected_names
from patcher.verify.policy.treediff import tree_changes
from tests.support.cheats import make_diff
from tests.support.corpus import AWARE, CHEATS, HONEST, KINDS, REPOS, SLIP_RULES, Cheat, Edits, Honest, ToyRepo
from tests.support.corpus.host import held_out, plain_pytest, pytest_command, write_tree
from tests.support.corpus.today import REFUSED_HONEST, VERIFIED_CHEATS
from tests.support.helpers import make_repo


@dataclass
class Trees:
    where: Path
    bases: dict[str, Path] = field(default_factory=dict)
    answers: dict[tuple[str, str], str] = field(default_factory=dict)
    ran: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    """Per cheat id: plain pytest's exit code and output tail, the held-out answer."""

    def base(self, repo: ToyRepo) -> Path:
        """The repository as a git work tree (made once)."""
        if repo.name not in self.bases:
            self.bases[repo.name] = make_repo(self.where / f"base-{repo.name}", repo.files)
        return self.bases[repo.name]

    def tree(self, repo: ToyRepo, edits: Edits) -> Path:
        return write_tree(self.where / f"tree-{uuid.uuid4().hex}", repo.files, edits)

    def run_all(self, cheats: list[Cheat]) -> None:
        """Every cheat's runs, a few at a time (each is two short subprocesses), and the honest answers."""
        wanted = {(c.repo.name, c.held_out): c.repo for c in cheats}
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = pool.map(lambda k: held_out(self.tree(wanted[k], wanted[k].honest), wanted[k], k[1]), wanted)
            self.answers = dict(zip(wanted, answers, strict=True))
            self.ran = dict(zip([c.id for c in cheats], pool.map(self._run, cheats), strict=True))

    def _run(self, cheat: Cheat) -> tuple[int, str, str]:
        tree = self.tree(cheat.repo, cheat.edits)
        run = plain_pytest(tree, pytest_command(cheat.command, cheat.edits))
        return run.returncode, run.stdout[-1200:], held_out(tree, cheat.repo, cheat.held_out)


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trees]:
    yield Trees(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def ran(trees: Trees) -> Trees:
    trees.run_all(CHEATS)
    return trees


def test_the_corpus_has_the_shape_issue_34_asks_for() -> None:
    kinds = Counter(c.kind for c in CHEATS)
    assert len(CHEATS) >= 60 and len(kinds) >= 12, kinds
    assert min(kinds.values()) >= 3, kinds
    slipping = {c.kind for c in CHEATS if c.slips}
    assert slipping == set(KINDS), set(KINDS) - slipping
    assert all(set(c.slips) <= set(SLIP_RULES) for c in CHEATS)
    assert len({c.id for c in CHEATS}) == len(CHEATS)
    assert {c.id for c in CHEATS} >= VERIFIED_CHEATS and set(REFUSED_HONEST) <= {h.label for h in HONEST}
    assert len({c.repo.name for c in CHEATS}) >= 6 and len({r.exc for r in REPOS.values()}) >= 5


def test_the_aware_corpus_has_the_shape_issue_42_asks_for() -> None:
    """At least 40 cheats aimed at the judges, for each judge one or more, recognising and starving, beside the input
    dimensions of item 2; on the typed toy repositories too (a date, a Decimal, a dataclass, an imported dict)."""
    assert len(AWARE) >= 40 and {c.id for c in AWARE} <= {c.id for c in CHEATS}
    judges = Counter(c.targets for c in AWARE)
    assert set(judges) >= {"held_out", "context", "second", "runtime", "values", "perturbed"}, judges
    kinds = {c.kind for c in AWARE}
    assert {"aware_held_out", "starves_held_out", "aware_runs", "starves_runs"} <= kinds, kinds
    assert {"identity", "number_kind", "text_form", "table_keys", "dates", "built_instances", "nested_input",
            "loose_compare"} <= kinds, kinds
    assert {"cal", "till", "parcels", "orders"} <= {c.repo.name for c in AWARE}


@pytest.mark.parametrize("repo", REPOS.values(), ids=list(REPOS))
def test_each_toy_repo_crashes_as_it_says_and_its_fix_passes(trees: Trees, repo: ToyRepo) -> None:
    base = plain_pytest(trees.tree(repo, {}), pytest_command(repo.repro, {}))
    assert base.returncode == 1 and f"{repo.exc}" in base.stdout, base.stdout[-800:]
    fixed = trees.tree(repo, repo.honest)
    for command in (repo.repro, repo.suite):
        run = plain_pytest(fixed, pytest_command(command, {}))
        assert run.returncode == 0, run.stdout[-800:]


@pytest.mark.parametrize("fix", HONEST, ids=[h.label for h in HONEST])
def test_each_honest_fix_passes_plain_pytest(trees: Trees, fix: Honest) -> None:
    tree = trees.tree(fix.repo, fix.edits)
    for command in (fix.command, fix.repo.suite):
        run = plain_pytest(tree, pytest_command(command, fix.edits))
        assert run.returncode == 0, run.stdout[-800:]


@pytest.mark.parametrize("cheat", CHEATS, ids=[c.id for c in CHEATS])
def test_each_cheat_passes_plain_pytest_and_a_held_out_input_shows_it_is_no_fix(ran: Trees, cheat: Cheat) -> None:
    code, output, got = ran.ran[cheat.id]
    assert code == 0, output
    fixed = ran.answers[(cheat.repo.name, cheat.held_out)]
    assert got != fixed, f"{cheat.held_out}: the cheat and the honest fix both {got}"


SYNTAX = [c for c in CHEATS if {"policy", "probes", "constructs", "hints"} & set(c.slips)]


@pytest.mark.parametrize("cheat", SYNTAX, ids=[c.id for c in SYNTAX])
def test_each_spelling_gets_past_the_syntax_rules_it_names(trees: Trees, cheat: Cheat) -> None:
    base = trees.base(cheat.repo)
    changes = tree_changes(base, trees.tree(cheat.repo, cheat.edits))
    found: dict[str, list[str]] = {
        "probes": [f"{p.path}:{p.line}: {p.rule}" for p in find_probes(changes)],
        "constructs": [f"{p.path}:{p.line}: {p.rule}" for p in find_constructs(changes)],
        "hints": [str(h) for h in diff_hints(changes, base, list(cheat.repo.files), cheat.command)],
    }
    if "policy" in cheat.slips:
        diff = make_diff(base, trees.where / f"policy-{uuid.uuid4().hex}", cheat.edits)
        found["policy"] = check_diff(diff, cheat.repo.files).violations + check_tree(
            changes, cheat.repo.files, protected_names([]))
    caught = {rule: found[rule] for rule in cheat.slips if found.get(rule)}
    assert not caught, caught
