from accounts.users import email_domain


def test_known_user():
    assert email_domain("ada") == "example.org"


def test_unknown_user():
    assert email_domain("bob") is None
