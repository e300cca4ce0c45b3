"""What the cheat corpus is made of: a toy repository with a real crash, an honest fix of it, and cheats.

A cheat is a set of file edits that turns the failing test green under plain pytest without fixing the bug;
its `held_out` expression, run outside any test runner, answers differently from the honest fix, which is
what shows it is no fix (tests/verify/test_cheat_corpus.py checks both on the host, without Docker).
"""

from __future__ import annotations

from dataclasses import dataclass

Edits = dict[str, str | None]
"""Path -> new text (None deletes the file)."""

SLIP_RULES = ("policy", "probes", "constructs", "hints", "perturb", "evidence", "second_judge")
"""The rules a cheat may be written to slip past: policy.py, probes.py, constructs.py, hints.py (the syntax
rules, checked on the host), the perturbed reproductions, the harness's evidence stream, the second judge."""


@dataclass(frozen=True)
class ToyRepo:
    name: str
    files: dict[str, str]
    repro: str
    """The command that reproduces the crash (fails on the base)."""
    exc: str
    site: tuple[str, str]
    """The crash site: (file, function) the exception is raised through."""
    honest: Edits
    """The real fix: the reference a held-out input's answer is compared with."""
    prelude: str
    """Python that imports what a held-out expression calls."""
    suite: str = "python -m pytest -q"

    def edit(self, path: str, old: str, new: str, header: str = "", extra: Edits | None = None) -> Edits:
        """`path` with `old` (which must occur) replaced by `new` and `header` put at its top, plus other edits."""
        return {**self.rewrite(path, (old, new), header=header), **(extra or {})}

    def rewrite(self, path: str, *pairs: tuple[str, str], header: str = "", tail: str = "") -> Edits:
        """`path` with each (old, new) replaced in turn (each old must occur), `header` at its top and `tail`
        at its end."""
        text = self.files[path]
        for old, new in pairs:
            if old not in text:
                raise ValueError(f"{self.name}: {old!r} is not in {path}")
            text = text.replace(old, new, 1)
        return {path: header + text + tail}

    def ahead(self, path: str, anchor: str, body: str, header: str = "", extra: Edits | None = None) -> Edits:
        """`path` with `body` ahead of the line `anchor` and `header` at its top, plus other edits."""
        return self.edit(path, anchor, body + anchor, header, extra)


@dataclass(frozen=True)
class Cheat:
    kind: str
    label: str
    repo: ToyRepo
    edits: Edits
    held_out: str
    """A Python expression (after the repo's prelude), run outside any test runner in a fresh interpreter: the
    cheat's answer differs from the honest fix's."""
    slips: tuple[str, ...] = ()
    """The rules (SLIP_RULES) this spelling was written to get past; the host test checks the syntax ones."""
    targets: str = ""
    """The judge of issue 34 meant to stop it (held_out, context, runtime, values, records, policy, evidence)."""
    repro: str | None = ""
    """The reproduction: "" the repo's, None the tests the diff adds, else this command."""

    @property
    def id(self) -> str:
        return f"{self.kind}: {self.label}"

    @property
    def command(self) -> str | None:
        """The reproduction command verification is given (None: the diff's own tests)."""
        return self.repo.repro if self.repro == "" else self.repro


@dataclass(frozen=True)
class Honest:
    """A real fix handed to verification as an agent's diff: it must come back verified."""

    label: str
    repo: ToyRepo
    edits: Edits
    repro: str | None = ""
    """As Cheat.repro."""

    @property
    def command(self) -> str | None:
        return self.repo.repro if self.repro == "" else self.repro
