"""The LLM agent: the loop (one screen), its tools and their dispatch, the guards that end a run, the
context fitting, the task text, the notes before a give-up, telemetry around the model and the tools, and
the feedback it hears when verification rejects its diff; and the reviewer, the same model reading a verified
diff in a fresh context.
"""

from patcher.agent.feedback import STRIKES, attempt_record, diff_digest, verdict_note
from patcher.agent.guards import Limits
from patcher.agent.loop import Agent
from patcher.agent.nudges import Briefing
from patcher.agent.outcome import AgentResult
from patcher.agent.review import review_diff, reviewer_model
from patcher.agent.task import briefing, reproduction_command, task_text

__all__ = [
    "STRIKES",
    "Agent",
    "AgentResult",
    "Briefing",
    "Limits",
    "attempt_record",
    "briefing",
    "diff_digest",
    "reproduction_command",
    "review_diff",
    "reviewer_model",
    "task_text",
    "verdict_note",
]
