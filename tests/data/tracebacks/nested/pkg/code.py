import functools


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def outer(values):
    def helper(v):
        return v + 1

    total = 0
    for v in values:
        total += helper(v)
    return total / len(values)


@deco
def decorated(d):
    def unused():
        return None

    return d["key"]


def with_lambda(xs):
    return list(map(lambda x: 1 / x, xs))


def with_listcomp(xs):
    return [1 / x for x in xs]


def with_genexpr(xs):
    return sum(1 / x for x in xs)


class Box:
    def __init__(self, items):
        self.items = items

    def first(self):
        def pick(items):
            return items[0]
        return self.items[0]


def load(d):
    try:
        return d["x"]
    except KeyError as e:
        raise ValueError("no x") from e


def during(d):
    try:
        return d["x"]
    except KeyError:
        return int("nope")


def make_divider(by):
    def divide(x):
        return x / by
    return divide


def tagged(*tags):
    def wrap(fn):
        fn.tags = tags
        return fn
    return wrap


class Registry:
    @staticmethod
    @tagged(
        "slow",
        "io",
    )
    def make(spec):
        return spec["kind"]


async def fetch(d):
    def unused():
        return None

    return d["url"]


def build():
    class Config:
        ratio = 1 / 0

    return Config
