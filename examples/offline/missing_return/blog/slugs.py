def normalize(title):
    """Lower case, single spaces."""
    " ".join(title.lower().split())


def slug(title):
    return normalize(title).replace(" ", "-")
