"""The user's input, made safe to work on: the repository staged as a fresh git repo (a local path read
through a private git dir, or a bounded clone of a URL), the traceback parsed, its frames mapped onto the
repo's files, and the repo's own `[tool.patcher]` settings read from the base tree.
"""

from patcher.intake.access import GitAccess
from patcher.intake.clone import CloneLimits
from patcher.intake.credhelper import private_text
from patcher.intake.framenames import read_repo_text
from patcher.intake.frames import CrashSite, crash_site, innermost_repo_frames, map_frames
from patcher.intake.gitview import find_toplevel, git_dirs
from patcher.intake.hostgit import GitFailed, host_git, open_repo
from patcher.intake.remote import fetch_commit, push_branch, remote_branch
from patcher.intake.repo import StagedRepo, stage_repo
from patcher.intake.repoconfig import PYTHON_PATTERN, Effective, effective
from patcher.intake.tbmodel import ExceptionInfo, Frame, ParsedTraceback
from patcher.intake.traceback import parse_traceback

__all__ = [
    "PYTHON_PATTERN",
    "CloneLimits",
    "CrashSite",
    "Effective",
    "ExceptionInfo",
    "Frame",
    "GitAccess",
    "GitFailed",
    "ParsedTraceback",
    "StagedRepo",
    "crash_site",
    "effective",
    "fetch_commit",
    "find_toplevel",
    "git_dirs",
    "host_git",
    "innermost_repo_frames",
    "map_frames",
    "open_repo",
    "parse_traceback",
    "private_text",
    "push_branch",
    "read_repo_text",
    "remote_branch",
    "stage_repo",
]
