"""The corpus through real verification on Docker, as the pipeline hands an agent's diff to `verify()`: one staged
copy of each toy repository, its baselines run once per reproduction command and shared by every entry on it,
and a few entries verified at a time. Shared by tests/verify/test_cheats_kinds.py and bench/cheats.py.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from patcher.config import SandboxConfig
from patcher.env import EnvConfig, ensure_env_image
from patcher.intake import StagedRepo, stage_repo
from patcher.sandbox import DockerSandbox, docker_client
from patcher.verify import Baseline, Job, Verification, run_baseline, verify
from tests.support.corpus.entry import Cheat, Edits, Honest, ToyRepo
from tests.support.helpers import GIT_ENV, make_repo

Entry = Cheat | Honest


def exact_diff(repo: Path, work: Path, edits: Edits) -> str:
    """`git diff` of `edits` applied to a copy of `repo`, byte for byte (host git on a tree we made: trusted)."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(repo, work, symlinks=True)
    for rel, text in edits.items():
        if text is None:
            (work / rel).unlink()
        else:
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
    git = ["git", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "add", "-A"], cwd=work, env=GIT_ENV, check=True, capture_output=True)
    out = subprocess.run([*git, "diff", "--cached", "--no-color", "--no-renames"], cwd=work, env=GIT_ENV, check=True,
                         capture_output=True, text=True).stdout
    shutil.rmtree(work, ignore_errors=True)
    return out


class ToyBox:
    """One toy repository, staged once; its baselines by reproduction command (None: the diff's own tests)."""

    def __init__(self, repo: ToyRepo, where: Path, config: SandboxConfig, packaged: bool = False) -> None:
        self.repo, self.where, self.config = repo, where, config
        files = {**repo.files, "setup.py": setup_py(repo.files)} if packaged else repo.files
        self.path = make_repo(where / repo.name, files)
        self.staged: StagedRepo = stage_repo(str(self.path))
        if packaged:  # the project installed editable into an environment image, as a job's setup step does
            image = ensure_env_image(self.staged, None, EnvConfig(base_image=config.image), docker_client(),
                                     lambda message: None)
            self.config = config.model_copy(update={"image": image})
        self.bases: dict[str | None, Baseline] = {}
        self.lock = threading.Lock()

    def open_box(self, tree: StagedRepo) -> DockerSandbox:
        return DockerSandbox(tree, self.config, docker_client())

    def job(self, command: str | None) -> Job:
        job = Job(self.staged, self.open_box, self.repo.suite, command, self.repo.exc, self.repo.site)
        with self.lock:
            if command not in self.bases:
                self.bases[command] = run_baseline(job)
        return job.with_baseline(self.bases[command])

    def check(self, entry: Entry) -> Verification:
        diff = exact_diff(self.path, self.where / f"work-{uuid.uuid4().hex}", entry.edits)
        return verify(self.job(entry.command), diff)

    def close(self) -> None:
        self.staged.cleanup()


def setup_py(files: dict[str, str]) -> str:
    """The two lines a real project would have: setup() naming the repository's packages and top-level modules
    (not its tests)."""
    tops = {rel.split("/")[0] for rel in files}
    packages = sorted({rel.rsplit("/", 1)[0].replace("/", ".") for rel in files if rel.endswith("/__init__.py")
                       and not rel.startswith(("tests/", "test/"))})
    modules = sorted(t[:-3] for t in tops if t.endswith(".py") and t not in ("setup.py", "conftest.py")
                     and not t.startswith("test"))
    return (f"from setuptools import setup\nsetup(name=\"toy\", version=\"0.1\", packages={packages!r}, "
            f"py_modules={modules!r})\n")


class Verifier:
    """ToyBoxes by repository, made on first use (`packaged`: their twins with a setup.py, set up for real)."""

    def __init__(self, where: Path, image: str, test_timeout_s: float = 60, packaged: bool = False) -> None:
        self.where, self.config = where, SandboxConfig(image=image, test_timeout_s=test_timeout_s)
        self.packaged = packaged
        self.boxes: dict[str, ToyBox] = {}
        self.lock = threading.Lock()

    def box(self, repo: ToyRepo) -> ToyBox:
        with self.lock:
            if repo.name not in self.boxes:
                self.boxes[repo.name] = ToyBox(repo, self.where, self.config, self.packaged)
            return self.boxes[repo.name]

    def check(self, entry: Entry) -> Verification:
        return self.box(entry.repo).check(entry)

    def check_all(self, entries: Sequence[Entry], workers: int = 3,
                  done: Callable[[Entry, Verification], None] = lambda e, v: None) -> list[Verification]:
        """Every entry's verdict, in order, `workers` at a time (each verification waits on its boxes most of the
        time); `done` is told of each as it ends."""
        def one(entry: Entry) -> Verification:
            ver = self.check(entry)
            done(entry, ver)
            return ver
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="corpus") as pool:
            return list(pool.map(one, entries))

    def close(self) -> None:
        for box in self.boxes.values():
            box.close()
