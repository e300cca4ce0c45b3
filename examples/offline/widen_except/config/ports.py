"""Port numbers from settings that may be missing or malformed."""


def parse_port(value: object, default: int = 8080) -> int:
    """The port `value` names, or `default` when it names none."""
    try:
        port = int(value)  # type: ignore[call-overload]
    except ValueError:
        return default
    return port
