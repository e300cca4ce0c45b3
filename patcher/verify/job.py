"""The job record every stage after intake receives whole: what was staged and parsed, how the crash
reproduces, the suite, the box factory, the image, and (once run) the baseline on the untouched code."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from patcher.intake import CrashSite, ParsedTraceback, StagedRepo
from patcher.sandbox import OpenBox

if TYPE_CHECKING:
    import docker

    from patcher.verify.records import Baseline


@dataclass(frozen=True)
class Job:
    staged: StagedRepo
    open_box: OpenBox
    """The box factory: a fresh hardened box over a tree (the staged one, or a patched copy)."""
    suite_command: str
    repro: str | None = None
    """The command that reproduces the crash (None: the agent must add a test that does)."""
    exc_type: str | None = None
    site: CrashSite | None = None
    parsed: ParsedTraceback | None = None
    """The traceback with its frames mapped onto the repo's files (None for `patcher verify --test`)."""
    traceback: str = ""
    image: str = ""
    """The image the boxes start from (the environment image when one was built)."""
    client: docker.DockerClient | None = None
    baseline: Baseline | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    """What the boxes were made of, for provenance: `python` (version, image, source) and `setup` (what the
    environment image's setup read and installed; None without one)."""

    @property
    def base(self) -> Baseline:
        """The baseline; every stage after `prepare` may rely on it."""
        if self.baseline is None:
            raise RuntimeError("the job has no baseline yet (run_baseline comes first)")
        return self.baseline

    def with_baseline(self, baseline: Baseline) -> Job:
        return replace(self, baseline=baseline)
