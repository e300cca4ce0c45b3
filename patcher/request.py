"""A repair job as its asker names it: the settings `patcher fix` takes as flags and `POST /v1/jobs` as JSON
fields, by the same names. Both build the pipeline's JobSpec with `job_spec()`, so the CLI and the API
cannot drift apart; what only the host decides (model endpoint, image, trace directory, clone bounds)
is added there, never taken from the asker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from patcher.agent import Limits
from patcher.errors import BadInput
from patcher.intake import PYTHON_PATTERN

if TYPE_CHECKING:
    from patcher.pipeline import JobSpec

EXAMPLE: dict[str, Any] = {
    "repo": "https://github.com/example/shop.git", "ref": "main",
    "traceback": "Traceback (most recent call last):\n  File \"shop/cart.py\", line 12, in total\n"
                 "    return sum(p.price for p in items) / len(items)\nZeroDivisionError: division by zero\n",
    "test_command": "python -m pytest -q tests/test_cart.py", "suite_command": "python -m pytest -q",
    "engine": "auto", "setup": "pip install -e .", "attempts": 3, "offline_limit": 200, "offline_budget_s": 120,
    "limits": {"max_rounds": 30, "timeout_s": 900, "max_cost_usd": 0.5},
}


class JobRequest(BaseModel):
    """A repair job as a client submits it (`patcher fix` flags, `POST /v1/jobs` body)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True,
                              json_schema_extra={"examples": [EXAMPLE]})

    repo: str = Field(min_length=1, max_length=4096)
    """A git URL (https, http, ssh, git, or user@host:path), or a path (for a server: under an allowed root)."""
    ref: str | None = Field(None, min_length=1, max_length=255, pattern=r"^[^\s\x00-\x1f-][^\s\x00-\x1f]*$")
    """Commit, branch or tag; unset means the work tree as it is (for a path)."""
    traceback: str = Field(min_length=1)
    """The crash report text (a server limits its size)."""
    test_command: str | None = Field(None, min_length=1, max_length=4096)
    """Command that reproduces the crash inside the sandbox (`--test`)."""
    suite_command: str | None = Field(None, min_length=1, max_length=4096)
    """Pass-to-pass suite (`--suite`); default: [tool.patcher] suite of the repository, else `python -m pytest -q`."""
    engine: Literal["agent", "offline", "auto"] | None = None
    """Who proposes the fix (`--engine`): the model, fix templates, or templates first; default: auto when a model
    is configured, else offline."""
    setup: str | None = Field(None, min_length=1, max_length=4096)
    """Command that installs the dependencies (`--setup`); default: read from pyproject.toml, requirements*.txt,
    setup.cfg/setup.py. It runs in its own box, the only one with network."""
    python: str | None = Field(None, pattern=PYTHON_PATTERN)
    """Python (X.Y) the boxes run (`--python`); default: [tool.patcher] python, else chosen from what the repository
    declares (.python-version, requires-python, tox.ini and classifiers); one this machine cannot have is
    setup_failed."""
    attempts: int = Field(3, ge=1, le=10)
    """Verifications the agent's diff may get (`--attempts`); each rejected one is explained to the agent."""
    limits: Limits = Field(default_factory=Limits)
    """Agent guards (`--max-rounds`, `--max-cost`, `--timeout`); a server caps them."""
    offline_limit: int = Field(200, ge=0, le=5000)
    """Most template candidates the offline engine tries."""
    offline_budget_s: float = Field(120.0, gt=0, le=3600)
    """Seconds the offline engine may spend trying them (a server caps it at its longest agent time)."""


def job_request(**fields: Any) -> JobRequest:
    """A JobRequest from flags; BadInput (one line, naming the setting) when one is out of range."""
    try:
        return JobRequest(**fields)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors())
        raise BadInput(f"invalid job settings: {problems}") from e


def job_spec(request: JobRequest, **host: Any) -> JobSpec:
    """The pipeline's job: the asker's settings plus the host's own (model, sandbox, trace_dir, clone, …)."""
    from patcher.pipeline import JobSpec

    return JobSpec(**request.model_dump(), **host)
