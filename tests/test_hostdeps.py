"""The one list of host programs: setup installs from it, doctor and the test session check it."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patcher import hostdeps
from patcher.doctor import host_program_checks

ROOT = Path(__file__).resolve().parents[1]


def only_python_on_path(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if k not in ("DOCKER_HOST", "CI")}
    return {**env, "PATH": str(bin_dir)}


def test_every_program_the_code_calls_is_listed() -> None:
    names = {p.name for p in hostdeps.PROGRAMS}
    assert {"git", "rg", "dockerd", "debootstrap", "chromium", "postgres", "ip"} <= names
    assert all(p.package and p.why and p.needed_by in ("product", "tests") for p in hostdeps.PROGRAMS)


def test_missing_names_the_debian_packages(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "patcher.hostdeps", "missing"], cwd=ROOT, capture_output=True,
                         text=True, env=only_python_on_path(tmp_path), check=True)
    off_path = {p.package for p in hostdeps.PROGRAMS if p.where and glob.glob(p.where)}  # found where they live
    assert set(out.stdout.split()) == {p.package for p in hostdeps.PROGRAMS} - off_path


def test_check_fails_with_one_line_per_missing_program(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "patcher.hostdeps", "check"], cwd=ROOT, capture_output=True,
                         text=True, env=only_python_on_path(tmp_path))
    assert out.returncode == 1
    assert "`rg` is missing (serves search_code in the host-side sandbox (LocalSandbox)): " \
           "apt-get install -y ripgrep" in out.stderr
    assert len(out.stderr.splitlines()) == len([p for p in hostdeps.PROGRAMS if not (p.where and glob.glob(p.where))])


def test_a_program_off_path_is_found_where_it_lives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    server = tmp_path / "lib" / "postgresql" / "15" / "bin" / "postgres"
    program = hostdeps.HostProgram("postgres", "postgresql", "x", "tests",
                                   where=str(tmp_path / "lib/postgresql/*/bin/postgres"))
    assert hostdeps.missing((program,)) == [program]
    server.parent.mkdir(parents=True)
    server.write_text("")
    assert hostdeps.missing((program,)) == []


def test_dockerd_is_not_needed_with_a_remote_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("DOCKER_HOST", "tcp://docker.example:2376")
    assert "dockerd" not in {p.name for p in hostdeps.missing()}
    monkeypatch.delenv("DOCKER_HOST")
    assert "dockerd" in {p.name for p in hostdeps.missing()}


def test_doctor_names_the_package_and_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    lines = {c.name: c for c in host_program_checks()}
    assert lines["host program git"].status == "FAIL"
    assert "`apt-get install -y git`" in lines["host program git"].message
    assert lines["host program rg"].status == "warn"  # only the tests call it
    assert "`apt-get install -y ripgrep`" in lines["host program rg"].message


def test_the_test_session_stops_first_under_ci_when_a_program_is_missing(tmp_path: Path) -> None:
    env = {**only_python_on_path(tmp_path), "CI": "true"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/test_hostdeps.py::test_every_program_the_code_calls_is_listed"],
                         cwd=ROOT, capture_output=True, text=True, env=env)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "CI=true requires every host program" in out.stdout + out.stderr
    assert "apt-get install -y ripgrep" in out.stdout + out.stderr
    assert "1 passed" not in out.stdout
