"""The agent tests' fixtures: a staged shop repo and an agent run against a scripted model server."""

from tests.support.agent import run_agent, staged

__all__ = ["run_agent", "staged"]
