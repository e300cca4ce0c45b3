"""Perturbed reproductions under pytest, for fail-to-pass tests the second judge could not run.

In the judge's box (its tree is the one pytest judged): each variant goes in as a test file of its own
beside the original (`test_x_pv3.py`, so its conftest fixtures still apply); the source files the diff
changed are put back as on the base and pytest runs the variants; the diff's files go back and pytest runs
the variants that crashed the base the same way. Only with host-written files in a box nobody else uses.
"""

from __future__ import annotations

import shlex

from patcher.intake import StagedRepo
from patcher.sandbox import Sandbox
from patcher.verify.judges.perturbed.variants import Variant, variants
from patcher.verify.policy.treediff import Change
from patcher.verify.records import Refused
from patcher.verify.stream import crashed
from patcher.verify.testruns import TestRun, run_tests
from sandbox.protocol import WriteFileRequest

Crash = tuple[str, tuple[str, str] | None]
"""The exception type and crash site a variant must show."""


def under_pytest(box: Sandbox, staged: StagedRepo, tree: StagedRepo, changes: list[Change], nodes: list[str],
                 crash: Crash | None) -> tuple[list[Variant], list[Variant], list[Variant]]:
    """(tried, crash the base, still crash with the diff)."""
    tried = variants(tree.path, nodes)
    if not tried or crash is None or any(c.kind == "added" or c.new_text is None for c in changes):
        return tried, [], []
    try:
        base_text = {c.path: (staged.path / c.path).read_text(encoding="utf-8") for c in changes}
        diff_text = {c.path: (tree.path / c.path).read_text(encoding="utf-8") for c in changes}
    except (OSError, UnicodeDecodeError):
        return tried, [], []
    by_node = {}
    for n, v in enumerate(tried):
        rel, rest = v.test.split("::", 1)
        path = f"{rel[:-3]}_pv{n}.py"
        box.call(WriteFileRequest(path=path, content=v.source))
        by_node[f"{path}::{rest}"] = v
    _write(box, base_text)
    base = _run(box, list(by_node), "variants-base")
    held = [n for n in by_node if base.stream is not None and crashed(base.stream, {n}, *crash)]
    _write(box, diff_text)
    after = _run(box, held, "variants-diff") if held else None
    still = [n for n in held if after is not None and after.stream is not None and crashed(after.stream, {n}, *crash)]
    return tried, [by_node[n] for n in held], [by_node[n] for n in still]


def _write(box: Sandbox, files: dict[str, str]) -> None:
    for path, text in files.items():
        box.call(WriteFileRequest(path=path, content=text))


def _run(box: Sandbox, nodes: list[str], name: str) -> TestRun:
    run = run_tests(box, "python -m pytest -q " + shlex.join(nodes), name)
    if run.tampered:
        raise Refused("report_tampered", f"pytest's run of the perturbed reproductions: {run.tampered}")
    return run
