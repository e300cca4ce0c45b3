LIMITS = {"small": 10, "medium": 50, "large": 100}


def limit(size):
    return LIMITS[size]


def default_limit():
    """The limit of a medium plan."""
    return LIMITS["meduim"]
