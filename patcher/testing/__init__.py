"""Fakes of the seams, so tests and demos need no mocks.

`ScriptedModelServer` is a real HTTP server speaking the OpenAI chat-completions protocol (plain JSON
and server-sent events). It plays a script: each chat request takes the next step, a reply or a fault.

    with ScriptedModelServer([reply(tool_calls=[("read_file", {"path": "a.py"})]), reply("done")]) as srv:
        model = OpenAIModel(srv.model_config())

A step may be a callable `f(request_json) -> step` for dynamic scripts; a step serves one request, so a
52-round loop is `[f] * 52`. Tool-call ids are `call_1`, `call_2`, … across the whole run. When the
script runs out the server answers HTTP 500 with a message saying so, so a test fails loudly.

`ScriptedForge` (forge.py) plays GitHub, GitLab and Gitea for delivery the same way: a real HTTP server the
forges' own client libraries talk to, with the pull requests it opened and scripted faults.
"""

from patcher.testing.forge import ScriptedForge
from patcher.testing.script import (
    NULL_FINISH,
    Reply,
    Step,
    content_filter,
    cut_off,
    delay,
    http_error,
    malformed_args,
    reply,
)
from patcher.testing.server import RecordedRequest, ScriptedModelServer

__all__ = ["NULL_FINISH", "RecordedRequest", "Reply", "ScriptedForge", "ScriptedModelServer",
           "Step", "content_filter", "cut_off",
           "delay", "http_error", "malformed_args", "reply"]
