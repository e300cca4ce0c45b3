"""Delivery: a verified job's diff as one commit on `patcher/<job id>` pushed to the project's remote and a
pull request on its forge, and job events as signed webhooks.

    DeliveryConfig, WebhookEndpoint      config.py: what the operator sets per project / endpoint
"""

from patcher.delivery.config import EVENT_TYPES, DeliveryConfig, EventType, Forge, WebhookEndpoint

__all__ = ["EVENT_TYPES", "DeliveryConfig", "EventType", "Forge", "WebhookEndpoint"]
