def parse_port(text):
    """The port a config value names; None when the value is blank (unset)."""
    value = text.strip()
    return int(value)
