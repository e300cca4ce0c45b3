"""Cold vs warm job start for a repo with dependencies (tests/data/envs/clock: freezegun, src/ layout).

Each run times stage_repo -> ensure_env_image -> DockerSandbox ready and a first ping answered:
  cold  the environment image is absent (built: setup container, pip from the index, commit)
  warm  the environment image is cached (a hash and an image lookup)
  bare  the sandbox image with no ensure at all (the floor: the sandbox issue's start)
Medians over RUNS warm/bare interleaved runs and COLD cold runs. Images go to the repository
`patcher-env-bench` (removed at the end); the last-use index to a temp dir.

Run it as a module, since run as a file bench/sandbox.py would shadow the `sandbox` package:

    .venv/bin/python -m bench.envs [RUNS] [COLD]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import docker

from patcher.config import SANDBOX_IMAGE, SandboxConfig
from patcher.env import EnvConfig, build_image, ensure_env_image, prune
from patcher.intake import stage_repo
from patcher.sandbox import DockerSandbox, docker_client
from sandbox.protocol import PingRequest
from tests.support.helpers import make_repo

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "envs" / "clock"


def start(repo: Path, config: EnvConfig | None, client: docker.DockerClient) -> float:
    """Seconds from stage_repo to the first answered call (None config: the bare sandbox image)."""
    began = time.perf_counter()
    staged = stage_repo(str(repo))
    try:
        image = ensure_env_image(staged, None, config, client, lambda _: None) if config else SANDBOX_IMAGE
        with DockerSandbox(staged, SandboxConfig(image=image), client) as box:
            box.call(PingRequest())
            elapsed = time.perf_counter() - began
    finally:
        staged.cleanup()
    return elapsed


def main(runs: int, cold_runs: int) -> None:
    build_image(None, log=lambda _: None)
    client = docker_client(timeout=600)
    with tempfile.TemporaryDirectory() as tmp:
        files = {p.relative_to(FIXTURE).as_posix(): p.read_text() for p in FIXTURE.rglob("*") if p.is_file()}
        repo = make_repo(Path(tmp) / "clock", files)
        config = EnvConfig(repository="patcher-env-bench", home=Path(tmp) / "home")
        try:
            cold = []
            for _ in range(cold_runs):
                prune(client, config, remove_all=True)
                cold.append(start(repo, config, client))
            warm, bare = [], []
            for _ in range(runs):
                warm.append(start(repo, config, client))
                bare.append(start(repo, None, client))
        finally:
            prune(client, config, remove_all=True)
    w, b = statistics.median(warm), statistics.median(bare)
    print("clock repo (freezegun, src/ layout), stage_repo -> first answered call; medians, s")
    print(f"  cold (env image built)  {statistics.median(cold):7.3f}   runs: {' '.join(f'{x:.2f}' for x in cold)}")
    print(f"  warm (env image cached) {w:7.3f}   min {min(warm):.3f}  max {max(warm):.3f}  ({runs} runs)")
    print(f"  bare (sandbox image)    {b:7.3f}   min {min(bare):.3f}  max {max(bare):.3f}  ({runs} runs)")
    c = statistics.median(cold)
    print(f"  warm / bare {w / b:.2f}   warm - bare {1000 * (w - b):+.0f} ms   cold / warm {c / w:.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
