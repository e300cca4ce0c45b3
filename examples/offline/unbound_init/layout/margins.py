def margins(style, base):
    """Top plus bottom margin: both `base` when even, both twice it otherwise."""
    if style == "even":
        top = bottom = base
    else:
        top = base * 2
    return top + bottom
