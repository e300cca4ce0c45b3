"""Timestamped signatures: a signature older than max_age seconds, or from the future, is refused."""


class SignatureExpired(Exception):
    pass


def check_age(timestamp: int, max_age: int, now: int) -> None:
    """Raises SignatureExpired when the signature made at `timestamp` is too old at `now`, or not yet valid."""
    age = timestamp - now
    if age < 0:
        raise SignatureExpired(f"signature age {age} < 0 seconds")
    if age > max_age:
        raise SignatureExpired(f"signature age {age} > {max_age} seconds")
