"""The host git layer: GitPython, hardened so nothing a repository or the caller's environment names runs.

Every git process patcher starts on the host goes through `HardenedGit.execute`, which

- puts patcher's own `-c` settings first (SAFE_GIT: no fsmonitor, hooks, pager, credential helper, ext:: or
  file:// transport, untracked cache or submodule recursion),
- runs the `git` found on PATH with a clean environment: none of the caller's GIT_* variables (a GIT_DIR
  would redirect everything, GIT_PYTHON_GIT_EXECUTABLE would swap the program), no system or global
  config, fixed identities and dates (so a staging commit is a function of its content alone),
- starts it in a session of its own, so a bound (clone.py) can kill it with every helper it started.

`HardenedRepo` is GitPython's Repo over that Git, with its git dir and work tree always given to git
explicitly (git never discovers a `.git` from its working directory), and clones through `clone_from`,
which refuses unsafe protocols (`ext::`, `fd::`, …) and options (`--upload-pack`, `-c`, `--config`, …).

GitPython is imported only when a git layer is first needed: it raises at import where no git program
exists, and `patcher doctor` (and the test session) must still import patcher to say what to install.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import shutil
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import Popen
from typing import TYPE_CHECKING, Any

from patcher.errors import EnvironmentUnavailable

if TYPE_CHECKING:
    import git

SAFE_GIT = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never",
            "-c", "core.untrackedCache=false", "-c", "submodule.recurse=false", "-c", "credential.helper=",
            "-c", "core.pager=cat", "-c", "protocol.file.allow=never"]
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
           "GIT_AUTHOR_NAME": "patcher", "GIT_AUTHOR_EMAIL": "patcher@localhost",
           "GIT_COMMITTER_NAME": "patcher", "GIT_COMMITTER_EMAIL": "patcher@localhost",
           "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
           "GIT_NO_REPLACE_OBJECTS": "1", "GIT_OPTIONAL_LOCKS": "0"}
Env = dict[str, str]



@dataclass(frozen=True)
class Session:
    """What the git processes started in one context (a clone and its checkout) get besides the hardening."""

    settings: list[str] = field(default_factory=list)
    """More `-c key=value` arguments, after SAFE_GIT (so a credential helper named here is not reset)."""
    env: Env = field(default_factory=dict)
    """More environment (GIT_SSH_COMMAND, the credential helper's file), after GIT_ENV."""
    watch: Callable[[Popen[Any]], None] | None = None
    """Told of every process started with `as_process` (clone.py bounds them in time and size)."""


session: ContextVar[Session | None] = ContextVar("patcher_git_session", default=None)


def host_env(**extra: str) -> Env:
    """A clean environment for host git: no GIT_* of the caller's (a GIT_DIR would redirect everything)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**base, **GIT_ENV, **extra}


class GitFailed(Exception):
    """A host git command that exited non-zero; `stderr` is what git said."""

    def __init__(self, argv: list[str], status: int, stderr: str, stdout: str) -> None:
        super().__init__(f"{' '.join(argv[:3])} exited {status}: {stderr.strip()[-500:]}")
        self.argv, self.status, self.stderr, self.stdout = argv, status, stderr, stdout


def gitpython() -> Any:
    """The `git` module (GitPython); EnvironmentUnavailable naming the package when no git program exists."""
    program = shutil.which("git")
    if program is None:
        raise EnvironmentUnavailable("host program `git` is missing (patcher stages repositories and applies "
                                     "diffs with it): apt-get install -y git")
    import git

    return git


@functools.cache
def _classes() -> tuple[type[git.Git], type[git.Repo], type[git.RemoteProgress]]:
    git = gitpython()

    class HardenedGit(git.Git):  # type: ignore[misc,name-defined]
        def execute(self, command: Any, *args: Any, **kwargs: Any) -> Any:
            now = session.get() or Session()
            program = shutil.which("git") or "git"
            argv = [program, *SAFE_GIT, *now.settings, *command[1:]]
            ours = {**GIT_ENV, **now.env, **self._environment, **(kwargs.pop("env", None) or {})}
            stray = sorted(k for k in os.environ if k.startswith("GIT_") and k not in ours)
            if stray:  # GitPython starts from os.environ; `env -u` drops the caller's GIT_* (names only in argv)
                argv = ["env", *(a for k in stray for a in ("-u", k)), *argv]
            proc = super().execute(argv, *args, env=ours, start_new_session=True, **kwargs)
            if now.watch is not None and kwargs.get("as_process"):
                now.watch(proc.proc)
            return proc

    class HardenedRepo(git.Repo):  # type: ignore[misc,name-defined]
        GitCommandWrapperType = HardenedGit

        def __init__(self, path: str, worktree: str | None = None, odbt: Any = git.GitCmdObjectDB,
                     **_: Any) -> None:
            # Not GitPython's own __init__: that one takes GIT_DIR, GIT_WORK_TREE, GIT_COMMON_DIR and
            # GIT_OBJECT_DIRECTORY from the caller's environment. Here the git dir is `path` (or its .git), a
            # plain one of patcher's (no commondir), and the work tree the one given or the .git's parent.
            git_dir = Path(path) / ".git" if (Path(path) / ".git").is_dir() else Path(path)
            if not (git_dir / "HEAD").is_file() or not (git_dir / "objects").is_dir():
                raise git.InvalidGitRepositoryError(str(path))
            tree = worktree or (str(git_dir.parent) if git_dir.name == ".git" else None)
            self.git_dir, self._working_tree_dir, self._common_dir, self._bare = str(git_dir), tree, "", tree is None
            self.working_dir = tree or str(git_dir)
            self.git = self.GitCommandWrapperType(self.working_dir)
            self.git.update_environment(GIT_DIR=str(git_dir), **({"GIT_WORK_TREE": tree} if tree else {}))
            self.odb = odbt(str(git_dir / "objects"), self.git)

    class Tail(git.RemoteProgress):  # type: ignore[misc,name-defined]
        """The last lines git printed (a remote may say a lot while cloning: only these are kept)."""

        def __init__(self) -> None:
            super().__init__()
            self.lines: collections.deque[str] = collections.deque(maxlen=20)

        def _parse_progress_line(self, line: Any) -> None:
            text = line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)
            self.lines.append(text.rstrip()[:500])

    return HardenedGit, HardenedRepo, Tail


def hardened_git(cwd: Path | None = None) -> git.Git:
    """A GitPython command runner with patcher's hardening, running in `cwd`."""
    return _classes()[0](str(cwd) if cwd else None)


@contextlib.contextmanager
def open_repo(git_dir: Path, worktree: Path | None = None) -> Iterator[git.Repo]:
    """GitPython's Repo over a git dir of patcher's own (a view, a staging copy, a clone) and its work tree
    (default: the git dir's parent when it is a `.git`); closed at the end."""
    hardened: Any = _classes()[1]
    repo = hardened(str(git_dir), worktree=str(worktree) if worktree else None)
    try:
        yield repo
    finally:
        repo.close()


def repo_class() -> type[git.Repo]:
    return _classes()[1]


def tail_progress() -> Any:
    """A GitPython progress handler that keeps git's last 20 lines in `.lines`."""
    return _classes()[2]()


def host_git(cwd: Path, *args: str, env: Env | None = None, timeout: float = 600) -> str:
    """Host git with patcher's own settings; `env` points it at a private git dir (GIT_DIR, GIT_WORK_TREE)."""
    runner = hardened_git(cwd)
    status, out, err = runner.execute(["git", *args], env=env or {}, with_extended_output=True,
                                      with_exceptions=False, kill_after_timeout=timeout, stdout_as_string=True)
    if status != 0:
        raise GitFailed(["git", *args], status, err, out)
    return str(out)
