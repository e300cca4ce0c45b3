"""DockerSandbox against the real container: every tool, the attacks it must refuse, the limits that bound a
test, the result signature, the host backstop, the reaper and the cleanup.

Each test ends by checking that the box still answers and that only docker-init and the server remain.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

import patcher.sandbox.client as client_mod
import patcher.sandbox.docker as docker_box
from patcher.config import LABEL
from patcher.errors import EnvironmentUnavailable, SandboxError
from patcher.intake import StagedRepo, stage_repo
from patcher.sandbox import OWNER, DockerSandbox, owner_labels, reap
from patcher.sandbox.pool import BOOT
from sandbox.protocol import (
    EditFileRequest,
    GitDiffRequest,
    PingRequest,
    ReadFileRequest,
    RunTestRequest,
    SearchCodeRequest,
    ToolResult,
    WriteFileRequest,
)
from tests.support.boxes import _owned, config
from tests.support.helpers import git, make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]

ROOT = Path(__file__).resolve().parents[2]
README = "keep me\n"
FILES = {
    "README.md": README,
    "calc.py": "def add(a, b):\n    return a + b\n\n\nVALUE = 1\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}
PROBE = "python -c \"exec(open('_probe.py').read())\""
"""Runs the probe script written by run_py: `python -c` takes no newlines, a file does."""


@pytest.fixture
def host_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "host-only" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("host secret\n")
    return secret


@pytest.fixture
def staged(tmp_path: Path, host_secret: Path) -> Iterator[StagedRepo]:
    repo = make_repo(tmp_path / "repo", FILES, commit=False)
    links = {"passwd_link": "/etc/passwd", "etc_dir": "/etc", "secret_link": str(host_secret),
             "host_dir": str(host_secret.parent), "up_link": "..", "git_link": ".git"}
    for name, target in links.items():
        os.symlink(target, repo / name)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init with symlinks")
    result = stage_repo(str(repo))
    yield result
    result.cleanup()


@pytest.fixture
def box(staged: StagedRepo, sandbox_image: str, docker_client: docker.DockerClient) -> Iterator[DockerSandbox]:
    with DockerSandbox(staged, config(sandbox_image), client=docker_client) as sandbox:
        yield sandbox


def run_py(box: DockerSandbox, code: str, deadline_s: float = 20.0) -> ToolResult:
    assert not box.call(WriteFileRequest("_probe.py", code)).is_error
    return box.call(RunTestRequest(PROBE), deadline_s)


def probe_json(box: DockerSandbox, code: str) -> dict[str, object]:
    result = run_py(box, code)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.splitlines()[-1])


def assert_healthy(box: DockerSandbox) -> None:
    """The server answers and nothing but docker-init and the server is left in the container."""
    assert box.call(PingRequest(), 10).output == "pong"
    assert box.call(ReadFileRequest("README.md"), 10).output == f"     1\t{README}"
    commands = sorted(p[-1] for p in box.container.top()["Processes"])
    assert len(commands) == 2, commands
    assert commands[0].startswith(f"/sbin/docker-init -- python3 -S -c {BOOT}"), commands
    assert commands[1].startswith(f"python3 -S -c {BOOT}"), commands


def assert_refused(result: ToolResult) -> None:
    assert result.is_error, result.output
    assert result.output.startswith("refused"), result.output


# --- each tool once ---------------------------------------------------------------------------------------


def test_read_file_and_search_code(box: DockerSandbox) -> None:
    assert box.call(ReadFileRequest("calc.py", 2, 2)).output == "     2\t    return a + b\n"
    found = box.call(SearchCodeRequest("def add", glob="*.py"))
    assert not found.is_error
    assert found.output.splitlines() == ["calc.py:1:def add(a, b):"]
    assert_healthy(box)


def test_write_edit_and_git_diff_show_exactly_the_changes(box: DockerSandbox) -> None:
    assert box.call(GitDiffRequest()).output == "no changes"
    assert box.call(WriteFileRequest("pkg/new.py", "hello = 1\n")).output == "wrote 10 bytes to pkg/new.py"
    edited = box.call(EditFileRequest("calc.py", "VALUE = 1", "VALUE = 2"))
    assert edited.output == "edited calc.py: replaced 1 match at line 5"
    diff = box.call(GitDiffRequest()).data["diff"]
    files = [line for line in diff.splitlines() if line.startswith("diff --git")]
    assert files == ["diff --git a/calc.py b/calc.py", "diff --git a/pkg/new.py b/pkg/new.py"]
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == ["-VALUE = 1", "+VALUE = 2", "+hello = 1"]
    assert "new file mode 100644" in diff
    assert_healthy(box)


def test_run_test_of_a_passing_pytest(box: DockerSandbox) -> None:
    result = box.call(RunTestRequest("python -m pytest -q test_calc.py"), 60)
    assert (result.is_error, result.exit_code, result.timed_out) == (False, 0, False), result.output
    assert "1 passed" in result.output
    assert_healthy(box)


# --- confinement of tool paths ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "/workspace/repo/calc.py", "passwd_link",
                                  "etc_dir/passwd", "secret_link", "host_dir/secret.txt", "up_link", "up_link/x",
                                  "git_link/config", ".git/config", "./.GIT/HEAD"])
def test_reads_outside_the_repo_are_refused(box: DockerSandbox, path: str) -> None:
    assert_refused(box.call(ReadFileRequest(path)))
    assert_refused(box.call(SearchCodeRequest("root", path=path)))
    assert_healthy(box)


@pytest.mark.parametrize("path", ["../escape.py", "/tmp/escape.py", "/workspace/escape.py", "passwd_link",
                                  "etc_dir/x", "secret_link", "host_dir/x.txt", "up_link/x", "git_link/config",
                                  ".git/config", ".git/hooks/pre-commit", "sub/../.git/hooks/post-checkout"])
def test_writes_outside_the_repo_or_into_git_are_refused(box: DockerSandbox, host_secret: Path, path: str) -> None:
    assert_refused(box.call(WriteFileRequest(path, "import os\n")))
    assert_refused(box.call(EditFileRequest(path, "root", "pwned")))
    assert host_secret.read_text() == "host secret\n"
    assert sorted(p.name for p in host_secret.parent.iterdir()) == ["secret.txt"]
    assert box.call(GitDiffRequest()).output == "no changes"
    assert_healthy(box)


def test_host_files_behind_committed_symlinks_are_not_in_the_container(box: DockerSandbox) -> None:
    seen = probe_json(box, "import json, os\n"
                           "out = {}\n"
                           "for name in ('secret_link', 'host_dir/secret.txt'):\n"
                           "    try:\n"
                           "        out[name] = open(name).read()\n"
                           "    except OSError as e:\n"
                           "        out[name] = type(e).__name__\n"
                           "print(json.dumps(out))\n")
    assert seen == {"secret_link": "FileNotFoundError", "host_dir/secret.txt": "FileNotFoundError"}
    assert_healthy(box)


GIT_ATTACKS = """
import json, os
def attempt(fn):
    try:
        fn()
        return "done"
    except OSError as e:
        return f"{type(e).__name__}:{e.errno}"
def append(path):
    with open(path, "a") as f:
        f.write("[core]\\n\\tfsmonitor = touch /tmp/pwned\\n")
print(json.dumps({
    "config": attempt(lambda: append(".git/config")),
    "hook": attempt(lambda: append(".git/hooks/pre-commit")),
    "hooks_dir": attempt(lambda: os.mkdir(".git/hooks")),
    "rename": attempt(lambda: os.rename(".git", "moved")),  # EPERM: the sticky repo root
    "remove_index": attempt(lambda: os.unlink(".git/index")),
    "chmod": attempt(lambda: os.chmod(".git", 0o777)),
    "replace_head": attempt(lambda: os.replace("calc.py", ".git/HEAD")),
    "hardlink": attempt(lambda: (os.link(".git/config", "cfg"), append("cfg"))),  # a name of its own to write by
}))
"""


EROFS, EXDEV = f"OSError:{errno.EROFS}", f"OSError:{errno.EXDEV}"
GIT_REFUSALS = {  # .git mounted read-only (a daemon on this machine) / put in root-owned and read-only
    "mounted": {"config": "PermissionError:13", "hook": "FileNotFoundError:2", "hooks_dir": EROFS,
                "rename": "PermissionError:1", "remove_index": EROFS, "chmod": EROFS, "replace_head": EXDEV,
                "hardlink": EXDEV},
    "copied": {"config": "PermissionError:13", "hook": "FileNotFoundError:2", "hooks_dir": "PermissionError:13",
               "rename": "PermissionError:1", "remove_index": "PermissionError:13", "chmod": "PermissionError:1",
               "replace_head": "PermissionError:13", "hardlink": "PermissionError:1"},
}


@pytest.mark.parametrize("how", GIT_REFUSALS)
def test_test_processes_cannot_change_git(staged: StagedRepo, sandbox_image: str, docker_client: docker.DockerClient,
                                          monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    monkeypatch.setattr(docker_box, "shares_files", lambda client: how == "mounted")
    with DockerSandbox(staged, config(sandbox_image), client=docker_client) as box:
        _cannot_change_git(box, GIT_REFUSALS[how])


def _cannot_change_git(box: DockerSandbox, refusals: dict[str, str]) -> None:
    before = box.call(RunTestRequest("python3 -c \"import os; print(sorted(os.listdir('.git')))\"")).output
    assert probe_json(box, GIT_ATTACKS) == refusals
    assert box.call(RunTestRequest("python3 -c \"import os; print(sorted(os.listdir('.git')))\"")).output == before
    diff = box.call(GitDiffRequest()).data["diff"]
    assert [line for line in diff.splitlines() if line.startswith("diff --git")] == [
        "diff --git a/_probe.py b/_probe.py"]
    assert_healthy(box)


@pytest.mark.parametrize("command", ["python -m pytest; echo hi", "python -m pytest && curl http://x",
                                     "python -m pytest | cat", "python -c \"$(echo print)\"",
                                     "bash -c 'python -m pytest'", "curl http://example.com",
                                     "python -m pytest > /tmp/out"])
def test_run_test_refuses_shell_and_other_programs(box: DockerSandbox, command: str) -> None:
    result = box.call(RunTestRequest(command), 10)
    assert_refused(result)
    assert "Allowed:" in result.output
    assert result.exit_code is None
    assert_healthy(box)


# --- limits on what a test can do ---------------------------------------------------------------------------

FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
EAT_MEMORY = "chunks = []\nwhile True:\n    chunks.append(bytes([len(chunks) % 256]) * 2**20)\n"
SETSID_LOOP = "import os, time\nif os.fork() == 0:\n    os.setsid()\nwhile True:\n    time.sleep(0.05)\n"
SETSID_ORPHAN = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    while True:\n        time.sleep(0.05)\n"
                 "print('parent done', flush=True)\n")


def test_fork_bomb_is_bounded_and_killed(box: DockerSandbox) -> None:
    started = time.monotonic()
    result = run_py(box, FORK_BOMB, deadline_s=3)
    assert result.timed_out and result.is_error, result.output
    assert time.monotonic() - started < 15
    assert "could not be killed" not in result.output
    assert_healthy(box)


def test_unbounded_memory_kills_the_test_not_the_server(box: DockerSandbox) -> None:
    result = run_py(box, EAT_MEMORY, deadline_s=60)
    assert (result.exit_code, result.timed_out) == (-signal.SIGKILL, False), result.output
    assert result.output.startswith("killed by signal 9")
    assert_healthy(box)


def test_50_mb_of_output_is_cut_quickly(box: DockerSandbox) -> None:
    started = time.monotonic()
    result = box.call(RunTestRequest("python -c \"import sys; sys.stdout.write('x' * 50_000_000)\""), 30)
    assert time.monotonic() - started < 10
    assert result.exit_code == 0
    assert len(result.output) < 70_000
    assert result.truncated_bytes > 49_000_000
    assert f"[… {result.truncated_bytes} bytes cut …]" in result.output
    assert_healthy(box)


@pytest.mark.parametrize("code", [SETSID_LOOP, "while True:\n    pass\n"], ids=["fork-setsid", "plain-loop"])
def test_deadline_kills_loops_and_escaped_children(box: DockerSandbox, code: str) -> None:
    started = time.monotonic()
    result = run_py(box, code, deadline_s=3)
    assert result.timed_out and result.is_error and result.output.startswith("timed out"), result.output
    assert 3 <= time.monotonic() - started < 10
    assert_healthy(box)


def test_setsid_orphan_left_behind_by_a_finished_test_is_swept(box: DockerSandbox) -> None:
    result = run_py(box, SETSID_ORPHAN, deadline_s=10)
    assert (result.exit_code, result.timed_out) == (0, False), result.output
    assert "parent done" in result.output
    assert_healthy(box)


CONTAINER_FACTS = """
import errno, json, os, socket
status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines())
def errname(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
def write(path):
    with open(path, "w") as f:
        f.write("x")
def connect(host, port):
    with socket.create_connection((host, port), timeout=3):
        pass
server = [p for p in os.listdir("/proc") if p.isdigit() and p != "1"
          and b"sandbox.boot" in open(f"/proc/{p}/cmdline", "rb").read()]
print(json.dumps({
    "CapEff": status["CapEff"].strip(), "NoNewPrivs": status["NoNewPrivs"].strip(),
    "uid": os.getuid(), "euid": os.geteuid(), "interfaces": sorted(os.listdir("/sys/class/net")),
    "net_dev": sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]),
    "etc": errname(lambda: write("/etc/x")), "usr": errname(lambda: write("/usr/x")),
    "public": errname(lambda: connect("1.1.1.1", 53)), "gateway": errname(lambda: connect(GATEWAY, 2375)),
    "dns": errname(lambda: socket.getaddrinfo("example.com", 443)),
    "server_mem": errname(lambda: open(f"/proc/{server[0]}/mem", "rb")),
}))
"""


def test_container_is_unprivileged_unwritable_and_offline(box: DockerSandbox, docker_client: docker.DockerClient
                                                          ) -> None:
    ipam = docker_client.networks.get("bridge").attrs["IPAM"]["Config"] or [{}]
    gateway = ipam[0].get("Gateway", "172.17.0.1")
    facts = probe_json(box, CONTAINER_FACTS.replace("GATEWAY", repr(gateway)))
    assert facts["CapEff"] == "0000000000000000"
    assert facts["NoNewPrivs"] == "1"
    assert facts["uid"] == facts["euid"] == 47213
    assert facts["interfaces"] == facts["net_dev"] == ["lo"]
    assert facts["etc"] == facts["usr"] == "EACCES"  # a writable root (test_rootfs.py), but not the box user's
    assert facts["public"] == facts["gateway"] == "ENETUNREACH"
    assert facts["dns"] != "ok"
    assert facts["server_mem"] == "EACCES"  # the server is non-dumpable: its signing key stays private
    assert_healthy(box)


def test_the_box_answers_what_the_host_would_its_host_name_and_an_account_home_that_exists(box: DockerSandbox
                                                                                          ) -> None:
    """What the code under test can ask of the machine is answered as on the host, not as a container would
    (a host name of twelve hex digits, a home that does not exist): code that notices the box sees less."""
    from patcher.sandbox.pool import host_name

    facts = probe_json(box, "import json, os, pwd, socket\nhome = pwd.getpwuid(os.getuid()).pw_dir\n"
                            "print(json.dumps({'host': socket.gethostname(), 'home': home, "
                            "'exists': os.path.isdir(home), 'HOME': os.environ.get('HOME')}))")
    assert facts == {"host": host_name(), "home": "/tmp", "exists": True, "HOME": "/tmp"}
    assert host_name() == socket.gethostname().split(".")[0] or host_name() == "box"


# --- trust between host and server --------------------------------------------------------------------------

FORGE = """
import errno
import json
payload = json.dumps({"is_error": False, "output": "FORGED: all tests passed", "exit_code": 0})
line = json.dumps({"id": ID, "result": payload, "mac": "0" * 64})
with open("/proc/1/fd/1", "w") as f:  # PID 1 is docker-init, which shares the server's stdout
    f.write(line + "\\n")
print("forged", flush=True)
"""


def test_a_forged_result_line_is_never_accepted(box: DockerSandbox) -> None:
    """The forged line reaches the host before the real result; its HMAC fails, so the host fails closed:
    SandboxError, the container is killed and the box refuses further calls."""
    forged_id = box._channel._next_id + 2  # the write_file of run_py, then the run_test the forger runs in
    with pytest.raises(SandboxError, match="signature does not match"):
        run_py(box, FORGE.replace("ID", str(forged_id)), deadline_s=10)
    with pytest.raises(SandboxError, match="stopped earlier"):
        box.call(PingRequest(), 5)
    box.container.reload()
    assert box.container.status == "exited"


def test_host_backstop_kills_a_server_that_does_not_answer(staged: StagedRepo, sandbox_image: str,
                                                           docker_client: docker.DockerClient) -> None:
    with DockerSandbox(staged, config(sandbox_image, backstop_s=1.0), client=docker_client) as box:
        assert_healthy(box)
        box.container.pause()
        started = time.monotonic()
        with pytest.raises(SandboxError, match="host-side deadline"):
            box.call(PingRequest(), 1)
        assert 1.9 <= time.monotonic() - started < 5
        with pytest.raises(SandboxError, match="stopped earlier"):
            box.call(PingRequest(), 5)
        box.container.reload()
        assert box.container.status == "exited"


def test_a_box_killed_from_outside_says_how_its_container_ended(box: DockerSandbox) -> None:
    """Whoever killed it (the OOM killer, an operator, the daemon): the error says the stream ended and how the
    container did, so a log tells a kill from a server that crashed."""
    assert_healthy(box)
    box.container.kill()
    box.container.wait(timeout=20)
    with pytest.raises(SandboxError, match=r"closed its stream .*; its container is exited, exit code 137"):
        box.call(PingRequest(), 5)
    with pytest.raises(SandboxError, match=r"stopped earlier: .*exit code 137"):
        box.call(PingRequest(), 5)


# --- lifecycle: reaper and cleanup --------------------------------------------------------------------------

ORPHAN = """
import sys, time
from patcher.config import SandboxConfig
from patcher.intake.repo import stage_repo
from patcher.sandbox.docker import DockerSandbox
box = DockerSandbox(stage_repo(sys.argv[1]), SandboxConfig(**__import__("json").loads(sys.argv[2])))
print(box.container.name, box.volume.name, flush=True)
time.sleep(600)
"""


def test_reaper_removes_what_a_killed_orchestrator_left(box: DockerSandbox, staged: StagedRepo, tmp_path: Path,
                                                        sandbox_image: str, docker_client: docker.DockerClient
                                                        ) -> None:
    cfg = config(sandbox_image).model_dump_json()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    with subprocess.Popen([sys.executable, "-c", ORPHAN, str(staged.path), cfg], stdout=subprocess.PIPE,
                          env=env, cwd=ROOT, text=True) as proc:
        try:
            assert proc.stdout is not None
            container, volume = proc.stdout.readline().split()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
    docker_client.containers.get(container)  # left behind by the dead orchestrator
    docker_client.volumes.get(volume)

    removed = reap(docker_client)
    assert f"container {container}" in removed
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(container)
    if f"volume {volume}" not in removed:  # still in use while its container went away: the next reap takes it
        time.sleep(0.5)
        assert f"volume {volume}" in reap(docker_client)
    with pytest.raises(docker.errors.NotFound):
        docker_client.volumes.get(volume)
    assert f"container {box.container.name}" not in removed  # our own live box is not touched
    assert_healthy(box)


def test_a_container_someone_else_starts_from_the_image_is_not_reaped(sandbox_image: str,
                                                                      docker_client: docker.DockerClient) -> None:
    """The image carries patcher's label, so a plain `docker run` of it inherits the label but no owner: not
    an orphan of a dead orchestrator, and not ours to remove."""
    other = docker_client.containers.run(sandbox_image, ["sleep", "60"], detach=True, network_mode="none")
    try:
        assert other.labels.get(LABEL) == "1" and not other.labels.get(OWNER)
        assert f"container {other.name}" not in reap(docker_client)
        other.reload()
        assert other.status == "running"
    finally:
        other.remove(force=True)


def test_nothing_is_left_after_the_box_closes(staged: StagedRepo, sandbox_image: str,
                                              docker_client: docker.DockerClient) -> None:
    owner = owner_labels()[OWNER]
    with DockerSandbox(staged, config(sandbox_image), client=docker_client) as box:
        names = box.container.name, box.volume.name
        assert _owned(docker_client, owner) == ([names[0]], [names[1]])
        assert_healthy(box)
    assert _owned(docker_client, owner) == ([], [])


def test_a_relative_symlink_climbing_out_of_the_workspace_does_not_stop_the_job(
        tmp_path: Path, sandbox_image: str, docker_client: docker.DockerClient) -> None:
    repo = make_repo(tmp_path / "climb", {"a.py": "x = 1\n"}, commit=False)
    os.symlink("../../../etc/passwd", repo / "climb")
    (repo / "pkg/deep").mkdir(parents=True)
    os.symlink("../../../../../../../etc", repo / "pkg/deep/etc")
    staged = stage_repo(str(repo))
    try:
        with DockerSandbox(staged, config(sandbox_image), client=docker_client) as box:
            for path in ("climb", "pkg/deep/etc/passwd"):
                result = box.call(ReadFileRequest(path))
                assert_refused(result)
                assert "outside the repository" in result.output
                assert_refused(box.call(WriteFileRequest(path, "x\n")))
            assert box.call(GitDiffRequest()).output == "no changes"
            assert box.call(WriteFileRequest("b.py", "y = 2\n")).output == "wrote 6 bytes to b.py"
            diff = box.call(GitDiffRequest()).data["diff"]
            assert [line for line in diff.splitlines() if line.startswith("diff --git")] == [
                "diff --git a/b.py b/b.py"]
    finally:
        staged.cleanup()


def test_a_failed_start_leaves_nothing(staged: StagedRepo, docker_client: docker.DockerClient) -> None:
    with pytest.raises(EnvironmentUnavailable, match="missing"):
        DockerSandbox(staged, config("patcher-no-such-image:latest"), client=docker_client)
    assert _owned(docker_client, owner_labels()[OWNER]) == ([], [])
    assert client_mod.shares_files(docker_client)  # a missing image says nothing about mounting .git


def test_a_repo_larger_than_the_workspace_fails_the_start_saying_so(
        tmp_path: Path, sandbox_image: str, docker_client: docker.DockerClient) -> None:
    repo = make_repo(tmp_path / "big", {"a.py": "a = 1\n"})
    (repo / "blob.bin").write_bytes(os.urandom(3 * 2**20))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "blob")
    staged = stage_repo(str(repo))
    try:
        with pytest.raises(SandboxError, match=r"repository \(3\.\d MiB as tar\) does not fit the sandbox.s 2 MiB "):
            DockerSandbox(staged, config(sandbox_image, workspace_mb=2), client=docker_client)
        assert _owned(docker_client, owner_labels()[OWNER]) == ([], [])
    finally:
        staged.cleanup()


def test_until_git_is_in_only_reads_are_answered_and_a_failed_put_stops_the_box(
        staged: StagedRepo, sandbox_image: str, docker_client: docker.DockerClient,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docker_box, "shares_files", lambda client: False)  # .git put in by Docker, after start
    put = docker_box._put_git
    started = []

    def slow_then_refused(container: object, tree: StagedRepo) -> None:
        started.append(time.monotonic())
        time.sleep(1.0)
        put(container, tree)  # in: so the refusal below is the only thing wrong
        raise docker.errors.APIError("no room for .git")

    monkeypatch.setattr(docker_box, "_put_git", slow_then_refused)
    with DockerSandbox(staged, config(sandbox_image), client=docker_client) as box:
        assert box.call(ReadFileRequest("README.md")).output == f"     1\t{README}"  # at once, .git or not
        assert time.monotonic() - started[0] < 1.0
        with pytest.raises(SandboxError, match=r"Docker could not put the repository's \.git into the sandbox"):
            box.call(RunTestRequest(PROBE))  # waited for the put, never ran
        assert time.monotonic() - started[0] >= 1.0
        with pytest.raises(SandboxError, match="stopped earlier"):
            box.call(ReadFileRequest("README.md"))


def test_a_daemon_that_refuses_the_git_mount_gets_git_copied_in_from_then_on(
        staged: StagedRepo, sandbox_image: str, docker_client: docker.DockerClient,
        monkeypatch: pytest.MonkeyPatch) -> None:
    real, tried = docker_box.start_blank, []

    def refusing(client: docker.DockerClient, cfg: object, git_dir: Path | None = None, **kw: bool) -> object:
        tried.append(git_dir)
        if git_dir is not None:
            raise docker.errors.APIError("invalid mount config for type \"bind\": bind source path does not exist")
        return real(client, cfg, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(docker_box, "start_blank", refusing)
    monkeypatch.setitem(client_mod._SHARES, str(docker_client.api.base_url), True)
    for _ in range(2):
        with DockerSandbox(staged, config(sandbox_image), client=docker_client) as box:
            assert box.call(WriteFileRequest("new.py", "n = 1\n")).output == "wrote 6 bytes to new.py"
            assert "+n = 1" in box.call(GitDiffRequest()).data["diff"]
    assert tried == [staged.path / ".git", None, None]  # refused once, then not asked again
