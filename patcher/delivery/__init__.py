"""Delivery: a verified job's diff as one commit on `patcher/<job id>` pushed to the project's remote and a
pull request on its forge, and job events as signed webhooks.

    DeliveryConfig, WebhookEndpoint       config.py: what the operator sets per project / endpoint
    deliver(commit, facts, …)             run.py: the commit pushed once (branch.py), then the pull request
                                          (forges.py: PyGithub, python-gitlab, Gitea's REST API; message.py)
    send(endpoint, id, body)              webhooks.py: one signed attempt (Standard Webhooks), Slack format
"""

from patcher.delivery.branch import Commit, DeliveryRefused, push_commit, write_commit
from patcher.delivery.config import EVENT_TYPES, DeliveryConfig, EventType, Forge, WebhookEndpoint
from patcher.delivery.forges import ForgeError, PullRequest, forge_for, open_pull_request
from patcher.delivery.message import Facts, commit_message, pr_body, pr_title
from patcher.delivery.run import Delivered, deliver
from patcher.delivery.webhooks import Attempt, body_of, send, signature, slack_message

__all__ = [
           "EVENT_TYPES",
           "Attempt",
           "Commit",
           "Delivered",
           "DeliveryConfig",
           "DeliveryRefused",
           "EventType",
           "Facts",
           "Forge",
           "ForgeError",
           "PullRequest",
           "WebhookEndpoint",
           "body_of",
           "commit_message",
           "deliver",
           "forge_for",
           "open_pull_request",
           "pr_body",
           "pr_title",
           "push_commit",
           "send",
           "signature",
           "slack_message",
           "write_commit",
]
