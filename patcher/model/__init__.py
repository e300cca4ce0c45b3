"""The model seam: the `LLM` protocol, its OpenAI-compatible client and the client's configuration."""

from patcher.model.client import LLM, ModelReply, OpenAIModel, ToolCall, estimate_tokens, normalise_stop, price
from patcher.model.config import ModelConfig
from patcher.model.stream import ProgressHook, StreamProgress

__all__ = ["LLM", "ModelConfig", "ModelReply", "OpenAIModel", "ProgressHook", "StreamProgress", "ToolCall",
           "estimate_tokens", "normalise_stop", "price"]
