"""The host programs patcher and its tests call: one list, read by scripts/setup.sh and `patcher doctor`.

Standard library only, so setup can run it with the system Python before any venv exists:

    python3 -m patcher.hostdeps missing     # Debian packages of the programs not on PATH, one per line
    python3 -m patcher.hostdeps check       # exit 1 with one line per missing program
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class HostProgram:
    name: str
    package: str
    """Debian package that installs it."""
    why: str
    needed_by: str
    """"product" (patcher itself calls it) or "tests" (only the test suite does)."""
    unless_env: str | None = None
    """Not needed when this environment variable is set (dockerd, when DOCKER_HOST names a remote daemon)."""
    where: str | None = None
    """A glob where the program lives when it is not on PATH (PostgreSQL's server binaries)."""


PROGRAMS = (
    HostProgram("git", "git", "stages repositories and applies diffs on the host", "product"),
    HostProgram("dockerd", "docker.io", "runs the sandbox containers", "product", "DOCKER_HOST"),
    HostProgram("debootstrap", "debootstrap", "builds the offline base images when no registry answers", "product"),
    HostProgram("ssh", "openssh-client", "clones ssh remotes (git runs it)", "product"),
    HostProgram("tar", "tar", "unpacks the work tree in sandbox/tree.py, which the tests also run on the host",
                "tests"),
    HostProgram("head", "coreutils", "feeds tree.py's tar exactly the tree's bytes, on the host in the tests too",
                "tests"),
    HostProgram("rg", "ripgrep", "serves search_code in the host-side sandbox (LocalSandbox)", "tests"),
    HostProgram("curl", "curl", "talks to the server in the CI example's gate script (examples/ci), as CI does",
                "tests"),
    HostProgram("chromium", "chromium", "drives the review pages in the browser tests", "tests"),
    HostProgram("ip", "iproute2", "makes the network namespace the servers the tests' egress proxy reaches "
                "listen in (tests/netns.py)", "tests"),
    HostProgram("sshd", "openssh-server", "serves git over ssh in the private-access tests (tests/support/sshd.py)",
                "tests", where="/usr/sbin/sshd"),
    HostProgram("postgres", "postgresql", "serves the shared job store in the store and worker tests", "tests",
                where="/usr/lib/postgresql/*/bin/postgres"),
)


def found(program: HostProgram) -> bool:
    return shutil.which(program.name) is not None or bool(program.where and glob.glob(program.where))


def missing(programs: tuple[HostProgram, ...] = PROGRAMS) -> list[HostProgram]:
    return [p for p in programs if not found(p) and not (p.unless_env and os.environ.get(p.unless_env))]


def install_hint(programs: list[HostProgram]) -> str:
    packages = " ".join(sorted({p.package for p in programs}))
    return f"apt-get install -y {packages}"


def describe(program: HostProgram) -> str:
    return f"`{program.name}` is missing ({program.why}): apt-get install -y {program.package}"


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "check"
    gone = missing()
    if command == "missing":
        print("\n".join(sorted({p.package for p in gone})))
        return 0
    if command == "check":
        for program in gone:
            print(f"host program {describe(program)}", file=sys.stderr)
        return 1 if gone else 0
    print("usage: python3 -m patcher.hostdeps [missing|check]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
