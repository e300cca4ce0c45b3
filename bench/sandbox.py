"""Start-up and tool latency of the Docker sandbox on a ~5 MB repo, measured in one run.

(a) cold, no spare in the pool: bare: the same image and hardened settings (no workspace volume), create +
    attach + start until `python3 -c 'print(1)'` prints, vs ready: DockerSandbox constructed (volume,
    container with the staging `.git` mounted read-only, the work tree's tar built, sent and unpacked in the
    box, hello) and a first tool call that needs the repo answered (read_file of one of its files). Medians
    over RUNS interleaved runs; target ratio <= 1.3.
(a') ready when a BoxPool started the box ahead (as in a job: the next box starts while one works), the
    same first call, and a first git_diff (which waits for Docker to have put `.git` in); ratios to bare.
(b) read_file round trip from the host, p50/p95 over 300 calls; target p50 <= 2 ms.
(c) search_code (ripgrep over the whole repo) round trip, p50/p95 over 100 calls; target p50 <= 20 ms.

    .venv/bin/python bench/sandbox.py [RUNS]
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's directory leads sys.path and this module would shadow the `sandbox` package.
if Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import docker
import docker.errors

from patcher.config import SandboxConfig
from patcher.intake import StagedRepo, stage_repo
from patcher.sandbox import AttachStream, BoxPool, DockerSandbox, container_args, docker_client, require_image
from sandbox.protocol import GitDiffRequest, ReadFileRequest, SearchCodeRequest

GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "PATH": "/usr/bin:/bin"}
FILES, FUNCS = 440, 120  # 440 files of ~12 KB: ~5 MB
COLD_TARGET = 1.3
READY_FILE = f"pkg{(FILES - 1) % 20}/mod_{FILES - 1}.py"
"""Read as the first call: the repo is in and the server answers a real tool call, not only a ping."""


def make_repo(path: Path) -> Path:
    for n in range(FILES):
        f = path / f"pkg{n % 20}" / f"mod_{n}.py"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f'"""Module {n}."""\n\n' + "".join(
            f"def func_{n}_{k}(value, scale={k}):\n    total = value * scale + {n * k}\n"
            f"    return helper_{(n + k) % 97}(total)\n\n" for k in range(FUNCS)))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, env=GIT_ENV, check=True, capture_output=True)
    return path


def bare_start(client: docker.DockerClient, cfg: SandboxConfig) -> float:
    """Seconds from create to the first output of `python3 -c 'print(1)'`, hardened like the sandbox."""
    args: dict[str, Any] = container_args(cfg, "unused", {})
    del args["volumes"], args["working_dir"]
    args.update(command=["python3", "-c", "print(1)"], labels={"patcher.bench": "1"}, stdin_open=False)
    started = time.perf_counter()
    container = client.containers.create(**args)
    try:
        stream = AttachStream(container.attach_socket(params={"stdout": 1, "stderr": 1, "stream": 1}))
        container.start()
        out = stream.recv(30)
        elapsed = time.perf_counter() - started
        stream.close()
        assert out.strip() == b"1", out
        return elapsed
    finally:
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):  # another remover may be first
            container.remove(force=True)


def first_call(box: DockerSandbox) -> None:
    """The first tool call of a job's box, one that needs the repo in place: a read of one of its files."""
    got = box.call(ReadFileRequest(READY_FILE, 1, 1))
    assert not got.is_error and got.output.startswith("     1\t"), got.output


def sandbox_ready(staged: StagedRepo, cfg: SandboxConfig, client: docker.DockerClient) -> float:
    """Seconds from nothing (no tar built yet) to the first answered tool call."""
    staged._tars.clear()
    started = time.perf_counter()
    with DockerSandbox(staged, cfg, client) as box:
        first_call(box)
        return time.perf_counter() - started


def pooled_ready(staged: StagedRepo, cfg: SandboxConfig, pool: BoxPool, client: docker.DockerClient
                 ) -> tuple[float, float]:
    """Seconds to the first answered read, and to a first git_diff, when a spare was started while the
    previous box worked."""
    staged._tars.clear()
    pool.warm(cfg)
    time.sleep(1.0)  # the previous box's work (a test run) takes longer than a spare's start
    started = time.perf_counter()
    with DockerSandbox(staged, cfg, client, pool) as box:
        first_call(box)
        read = time.perf_counter() - started
        assert box.call(GitDiffRequest()).output == "no changes"
        return read, time.perf_counter() - started


def latencies(box: DockerSandbox, requests: list[Any]) -> tuple[list[float], list[float]]:
    """Host round trips and the server's own durations, in ms."""
    host, server = [], []
    for request in requests:
        started = time.perf_counter()
        result = box.call(request)
        host.append((time.perf_counter() - started) * 1000)
        server.append(result.duration_ms or 0.0)
        assert not result.is_error, result.output
    return host, server


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def cold_start(staged: StagedRepo, cfg: SandboxConfig, client: docker.DockerClient, runs: int
               ) -> tuple[float, float, float]:
    """(bare ms, ready ms, ratio): medians over `runs` interleaved pairs, after one warm-up pair."""
    bare_start(client, cfg), sandbox_ready(staged, cfg, client)
    bare, ready = [], []
    for _ in range(runs):
        bare.append(bare_start(client, cfg))
        ready.append(sandbox_ready(staged, cfg, client))
    b, r = statistics.median(bare) * 1000, statistics.median(ready) * 1000
    return b, r, r / b


def cold_figure(runs: int = 15) -> dict[str, float]:
    """The cold-start figure on the ~5 MB repo, for a bench that prints it beside others (bench/autojob.py)."""
    client = docker_client()
    cfg = SandboxConfig()
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        staged = stage_repo(str(make_repo(Path(tmp) / "repo")))
        try:
            b, r, ratio = cold_start(staged, cfg, client, runs)
        finally:
            staged.cleanup()
    return {"bare_ms": round(b), "ready_ms": round(r), "ratio": round(ratio, 2), "met": ratio <= COLD_TARGET}


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(runs: int = 15) -> None:
    client = docker_client()
    cfg = SandboxConfig()
    require_image(client, cfg.image)
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        repo = make_repo(Path(tmp) / "repo")
        started = time.perf_counter()
        staged = stage_repo(str(repo))
        intake_ms = (time.perf_counter() - started) * 1000
        try:
            size = sum(f.stat().st_size for f in repo.rglob("*.py"))
            print(f"repo: {len(staged.files)} files, {size / 2**20:.1f} MiB; intake (stage_repo) "
                  f"{intake_ms:.0f} ms, not counted below")
            b, r, ratio = cold_start(staged, cfg, client, runs)
            print(f"(a) cold start, median of {runs}: bare hardened run to first output {b:.0f} ms; sandbox "
                  f"ready (volume, container, {len(staged.tree_tar(cfg.uid)) / 2**20:.1f} MiB tree unpacked, .git in, "
                  f"hello, a first read_file) {r:.0f} ms; ratio {ratio:.2f} (target <= {COLD_TARGET}) "
                  f"{verdict(ratio <= COLD_TARGET)}")
            with BoxPool(client) as pool:
                pooled = [pooled_ready(staged, cfg, pool, client) for _ in range(runs)]
            p, g = (statistics.median(t[i] for t in pooled) * 1000 for i in (0, 1))
            print(f"(a') ready from a spare started ahead (BoxPool), median of {runs}: {p:.0f} ms, ratio to bare "
                  f"{p / b:.2f}; a first git_diff answered (.git put in) at {g:.0f} ms, {g / b:.2f}")
            with DockerSandbox(staged, cfg, client) as box:
                paths = [f"pkg{n % 20}/mod_{n}.py" for n in range(FILES)]
                reads = [ReadFileRequest(paths[i % FILES], (i * 7) % 400 + 1, (i * 7) % 400 + 40)
                         for i in range(300)]
                read_ms, read_server = latencies(box, reads)
                searches = [SearchCodeRequest(f"def func_{(i * 37) % FILES}_{i % FUNCS}\\b") for i in range(100)]
                search_ms, search_server = latencies(box, searches)
            p50, p95 = pct(read_ms, 50), pct(read_ms, 95)
            print(f"(b) read_file, 300 calls of 40 lines: p50 {p50:.2f} ms, p95 {p95:.2f} ms "
                  f"(in the server: p50 {pct(read_server, 50):.2f} ms) (target p50 <= 2 ms) {verdict(p50 <= 2)}")
            p50, p95 = pct(search_ms, 50), pct(search_ms, 95)
            print(f"(c) search_code over the whole repo, 100 calls: p50 {p50:.2f} ms, p95 {p95:.2f} ms "
                  f"(in the server: p50 {pct(search_server, 50):.2f} ms) (target p50 <= 20 ms) "
                  f"{verdict(p50 <= 20)}")
        finally:
            staged.cleanup()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
