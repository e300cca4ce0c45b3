USERS = [{"name": "ada", "email": "ada@example.org"}]


def find_user(name):
    for user in USERS:
        if user["name"] == name:
            return user
    return None


def email_domain(name):
    """Domain of the user's e-mail address, None if there is no such user."""
    user = find_user(name)
    return user["email"].split("@")[1]
