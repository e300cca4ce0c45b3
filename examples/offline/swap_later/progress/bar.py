def remaining(total, done):
    return total - done


def progress(done, total):
    """`3/5 ###.. .`: the count, a bar of `total` cells, and the last cell again."""
    left = remaining(done, total)
    label = f"{done}/{total}"
    cells = ["#"] * done + ["."] * left
    bar = "".join(cells)
    return f"{label} {bar} {cells[total - 1]}"
