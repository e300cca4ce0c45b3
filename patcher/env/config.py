"""Settings of environment images: how they are built, cached and evicted (plan.py, build.py, cache.py read them)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from patcher.config import SANDBOX_IMAGE


class EnvConfig(BaseModel):
    """How environment images are built, cached and evicted."""

    model_config = ConfigDict(extra="forbid")

    base_image: str = Field(SANDBOX_IMAGE, description="Image the setup container starts from and jobs build on.")
    repository: str = Field("patcher-env", description="Repository name of environment image tags.")
    max_gb: float = Field(10.0, description="Cap on the summed own size of environment images; LRU beyond it.")
    extras: list[str] = Field(["test", "tests", "testing", "dev", "devel", "develop", "development", "ci"],
                              description="Test words: an extra, dependency group, requirements file or nox session "
                              "whose name has one of these words is the tests' and installed (testreqs.py).")
    setup_timeout_s: float = Field(900.0, description="Deadline of the whole setup step; the container is killed.")
    memory_mb: int = Field(4096, description="Memory limit of the setup container (tmpfs /tmp counts against it).")
    tmp_mb: int = Field(1536, description="Size of the setup container's /tmp tmpfs (build directories).")
    pids: int = Field(512, description="Most processes and threads the setup container may hold.")
    cpus: float = Field(2.0, description="CPU limit of the setup container.")
    index_url: str | None = Field(None, description="Package index; None: the host's pip setting, else PyPI.")
    extra_index_urls: list[str] | None = Field(None, description="Extra indexes; None: the host's (http(s) only).")
    trusted_hosts: list[str] | None = Field(None, description="pip trusted hosts; None: the host's pip setting.")
    ca_bundle: Path | None = Field(None, description="CA bundle for the intercepted TLS; None: the host's pip "
                                                     "cert, REQUESTS_CA_BUNDLE, SSL_CERT_FILE, then Debian's.")
    egress_urls: list[str] = Field(default_factory=list, description="More hosts the setup step may reach "
                                   "through the proxy besides the indexes (e.g. a file host), as URLs.")
    home: Path | None = Field(None, description="Where the last-use index lives; None: PATCHER_HOME.")
