def make_formatter(prefix):
    def formatter(text):
        return f"{prefix}: {text}"
    return formatter


def announce(prefix, text):
    """The text with its prefix, as the notifier sends it."""
    format_line = make_formatter(prefix),
    return format_line(text)
