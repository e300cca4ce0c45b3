def batches(items, size, strict=False):
    """Lists of `size` items; the last may be shorter, unless `strict`, which refuses a short last batch."""
    out = [list(items[start:start + size]) for start in range(0, len(items), size)]
    if strict and out:
        last = out[-1]
        if len(last) == size:
            raise ValueError(f"the last batch has {len(last)} items, not {size}")
    return out
