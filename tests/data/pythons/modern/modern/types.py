"""Python 3.12's syntax for generics: this module (and so the package) does not parse before 3.12."""

type Pair[T] = tuple[T, T]


def first[T](pair: Pair[T]) -> T:
    return pair[0]
