"""`patcher doctor`: one line per thing patcher needs, each saying what to do when it is missing.

Exit code 3 when the Docker daemon, the sandbox image or a host program patcher calls is missing; the
model endpoint only warns, since `patcher verify` and the offline engine need no model, and so do the
programs only the test suite calls.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.parse
import urllib.request
from contextlib import closing
from dataclasses import dataclass
from typing import Literal

import docker

from patcher import hostdeps
from patcher.env import image_status, python_lines
from patcher.errors import BadInput, EnvironmentUnavailable
from patcher.sandbox import docker_client, docker_host

MODEL_PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class Check:
    status: Literal["ok", "warn", "FAIL"]
    name: str
    message: str

    def line(self) -> str:
        return f"{self.status:<6}{self.name}: {self.message}"


def run_doctor() -> tuple[list[Check], int]:
    """Run every check; return them with the exit code (3 when Docker or the image is missing)."""
    try:
        client = docker_client(timeout=10)
    except EnvironmentUnavailable as e:
        checks = [Check("FAIL", "docker daemon", str(e)),
                  Check("FAIL", "sandbox image", "cannot be checked without a Docker daemon")]
    else:
        with closing(client):
            checks = [_daemon_check(client), _image_check(client), _python_check(client)]
    checks.append(model_check())
    checks.extend(access_checks())
    checks.extend(host_program_checks())
    failed = any(check.status == "FAIL" for check in checks)
    return checks, 3 if failed else 0


def _daemon_check(client: docker.DockerClient) -> Check:
    version = client.version().get("Version", "?")
    return Check("ok", "docker daemon", f"{version} answering at {docker_host()}")


def _image_check(client: docker.DockerClient) -> Check:
    ok, message = image_status(client)
    return Check("ok" if ok else "FAIL", "sandbox image", message)


def _python_check(client: docker.DockerClient) -> Check:
    """The Python of each sandbox image here, and the versions this machine can have (never fails the doctor)."""
    return Check("ok", "pythons", "; ".join(python_lines(client)))


def host_program_checks() -> list[Check]:
    """One line per host program from the shared list: FAIL for what patcher calls, warn for test-only ones."""
    gone = {p.name for p in hostdeps.missing()}
    checks = []
    for program in hostdeps.PROGRAMS:
        name = f"host program {program.name}"
        if program.name not in gone:
            checks.append(Check("ok", name, f"found ({program.why})"))
            continue
        status: Literal["warn", "FAIL"] = "FAIL" if program.needed_by == "product" else "warn"
        checks.append(Check(status, name, f"missing, {program.why}: install it with "
                                          f"`apt-get install -y {program.package}` (or run scripts/setup.sh)"))
    return checks


def access_checks() -> list[Check]:
    """Which credential sources are configured for private git remotes and package indexes (never a secret)."""
    from patcher.env import EnvConfig, index_credentials, pip_settings, scrub
    from patcher.intake import GitAccess

    try:
        git = GitAccess.from_env().describe()
        git_check = Check("ok", "git credentials", "; ".join(git) if git else
                          "none (public remotes only; PATCHER_GIT_TOKENS_FILE or PATCHER_GIT_SSH_KEY give access)")
    except BadInput as e:
        git_check = Check("FAIL", "git credentials", str(e))
    indexes = pip_settings(EnvConfig())[2]
    with_auth = index_credentials(indexes)
    shown = ", ".join(scrub(u) for u in indexes if _host_port(u) in with_auth)
    return [git_check, Check("ok", "index credentials", f"added by the setup proxy for {shown} (from pip's "
                             "settings or netrc)" if shown else "none (the indexes are used without credentials)")]


def _host_port(url: str) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    return (parts.hostname or "").lower(), parts.port or (443 if parts.scheme == "https" else 80)


def model_check() -> Check:
    """Which model settings are set (never the key) and whether {OPENAI_BASE_URL}/models answers."""
    base_url = os.environ.get("OPENAI_BASE_URL", "").strip()
    key = os.environ.get("OPENAI_API_KEY", "")
    model = os.environ.get("PATCHER_MODEL", "").strip()
    if not (base_url or key or model):
        return Check("warn", "model endpoint", "OPENAI_BASE_URL, OPENAI_API_KEY and PATCHER_MODEL are unset: "
                     "`patcher fix` needs a model (`patcher verify` and --engine offline do not)")
    shown = _redact(base_url) if base_url else "unset (the OpenAI default)"
    settings = (f"OPENAI_BASE_URL={shown}, OPENAI_API_KEY {'set' if key else 'unset'}, "
                f"PATCHER_MODEL={model or 'unset'}")
    if not base_url:
        return Check("warn", "model endpoint", f"{settings}; not probed without OPENAI_BASE_URL")
    reachable, answer = _probe(base_url.rstrip("/") + "/models", key)
    status: Literal["ok", "warn"] = "ok" if reachable and model else "warn"
    hint = "" if model else "; set PATCHER_MODEL or pass --model"
    return Check(status, "model endpoint", f"{settings}; GET /models {answer}{hint}")


def _probe(url: str, key: str) -> tuple[bool, str]:
    request = urllib.request.Request(url)
    if key:  # never forwarded on a redirect
        request.add_unredirected_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=MODEL_PROBE_TIMEOUT_S) as response:
            return True, f"answered HTTP {response.status}"
    except urllib.error.HTTPError as e:
        e.close()
        note = " (check OPENAI_API_KEY)" if e.code in (401, 403) else ""
        return e.code < 500 and not note, f"answered HTTP {e.code}{note}"
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        return False, f"unreachable within {MODEL_PROBE_TIMEOUT_S:.0f} s ({reason})"


def _redact(url: str) -> str:
    """The URL without any user:password part."""
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return url
