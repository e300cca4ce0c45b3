"""The corpus checked on the host, without Docker: a cheat passes plain pytest, and a held-out input shows it is
no fix (its answer, outside any test runner, differs from the honest fix's).

Trees are plain copies in a temp dir; every run is a subprocess of this Python with a bare environment (PATH,
HOME, LANG), since the code under test is hostile (a cheat may end its process).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.corpus.entry import Edits, ToyRepo

RESULT = "\x00held-out:"
_ASK = """
import sys
sys.path.insert(0, sys.argv[1])
{prelude}
try:
    answer = "returned " + repr({expr})
except BaseException as e:
    answer = "raised " + type(e).__name__
sys.stdout.write({marker!r} + answer + "\\n")
sys.stdout.flush()
"""


def write_tree(dest: Path, files: dict[str, str], edits: Edits | None = None) -> Path:
    """`files` with `edits` applied (None deletes), written under `dest`."""
    shutil.rmtree(dest, ignore_errors=True)
    for rel, text in {**files, **(edits or {})}.items():
        if text is None:
            continue
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return dest


def bare_env(home: Path) -> dict[str, str]:
    """PATH, HOME and LANG; no bytecode written into the trees, and no third-party pytest plugins loaded
    (the cheats need none, and they double pytest's start-up)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def added_tests(edits: Edits) -> list[str]:
    return sorted(p for p, t in edits.items() if t is not None and p.split("/")[-1].startswith("test_"))


def pytest_command(command: str | None, edits: Edits) -> list[str]:
    """A pytest command as plain pytest runs it here (None: the tests `edits` add)."""
    command = command or "python -m pytest -q " + shlex.join(added_tests(edits))
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "pytest"], command
    return [sys.executable, *argv[1:], "-p", "no:cacheprovider"]


def plain_pytest(tree: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="corpus-home-") as home:
        return subprocess.run(argv, cwd=tree, env=bare_env(Path(home)), capture_output=True, text=True, timeout=120)


def held_out(tree: Path, repo: ToyRepo, expr: str) -> str:
    """What `expr` does in a fresh interpreter outside any test runner, from an empty working directory:
    `returned <repr>`, `raised <type>`, or `exit <code>` when the process ended without an answer."""
    code = _ASK.format(prelude=repo.prelude, expr=expr, marker=RESULT)
    with tempfile.TemporaryDirectory(prefix="corpus-cwd-") as cwd:
        run = subprocess.run([sys.executable, "-c", code, str(tree)], cwd=cwd, env=bare_env(Path(cwd)),
                             capture_output=True, text=True, timeout=60)
    if RESULT in run.stdout:
        return run.stdout.rsplit(RESULT, 1)[1].splitlines()[0]
    return f"exit {run.returncode}"
