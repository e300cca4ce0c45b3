import pytest
from tokens.signer import SignatureExpired, check_age


def test_fresh_signature_is_accepted():
    check_age(100, 60, 101)


def test_old_signature_is_refused():
    with pytest.raises(SignatureExpired):
        check_age(100, 60, 200)


def test_signature_from_the_future_is_refused():
    with pytest.raises(SignatureExpired):
        check_age(200, 60, 100)
