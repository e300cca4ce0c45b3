"""The model seam: the `LLM` protocol, its OpenAI-compatible client and the client's configuration."""

from patcher.model.client import LLM, ModelReply, OpenAIModel, ToolCall, estimate_tokens, normalise_stop, price
from patcher.model.config import ModelConfig

__all__ = ["LLM", "ModelConfig", "ModelReply", "OpenAIModel", "ToolCall", "estimate_tokens", "normalise_stop", "price"]
