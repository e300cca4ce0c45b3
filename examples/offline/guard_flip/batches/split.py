def batches(items, size, strict=False):
    """Lists of `size` items, one at a time; the last may be shorter, unless `strict`, which raises
    ValueError instead of yielding a short last batch."""
    for start in range(0, len(items), size):
        batch = list(items[start:start + size])
        if strict:
            if len(batch) == size:
                raise ValueError(f"the last batch has {len(batch)} items, not {size}")
        yield batch
