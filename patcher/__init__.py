"""patcher: a traceback in, a test-verified diff out, with every step inside a hardened sandbox."""

__version__ = "0.1.0"
