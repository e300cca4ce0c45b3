"""The test's input changed by the diff in a package module (heldinputs.py): refused only when the crash's own
input is the old value of a module constant the diff changed and the failing test imports it."""

from __future__ import annotations

from patcher.verify.heldinputs import changed_input
from patcher.verify.treediff import Change
from sandbox.plain import encode

SAMPLES_OLD = 'GUEST = "guest"\nGUEST_DOMAIN = ""\nADMIN = "Admin@Example.ORG"\n'
SAMPLES_NEW = 'GUEST = "guest@localhost"\nGUEST_DOMAIN = "localhost"\nADMIN = "Admin@Example.ORG"\n'
FROM_IMPORT = "from accounts.emails import domain\nfrom accounts.samples import GUEST\n\n\n" \
              "def test_guest():\n    assert domain(GUEST) == ''\n"
TESTED = {"pos": [encode("guest")], "kw": []}


def change(path: str, old: str, new: str) -> Change:
    return Change(path, "modified", old_text=old, new_text=new)


def test_a_constant_the_test_imports_and_hands_the_function_changed_by_the_diff_refuses() -> None:
    got = changed_input([change("accounts/samples.py", SAMPLES_OLD, SAMPLES_NEW)], FROM_IMPORT, TESTED,
                        "domain('guest')")
    assert got is not None and got.refuses and got.reason == "policy_violation"
    assert got.quote == "accounts/samples.py: GUEST = 'guest' -> 'guest@localhost'; domain('guest') still crashes"


def test_the_constant_read_off_its_module_refuses_too() -> None:
    test = "from accounts import samples\nfrom accounts.emails import domain\n\n\n" \
           "def test_guest():\n    assert domain(samples.GUEST) == ''\n"
    assert changed_input([change("accounts/samples.py", SAMPLES_OLD, SAMPLES_NEW)], test, TESTED, "d") is not None
    test = "import accounts.samples as s\n\n\ndef test_guest():\n    assert domain(s.GUEST) == ''\n"
    assert changed_input([change("accounts/samples.py", SAMPLES_OLD, SAMPLES_NEW)], test, TESTED, "d") is not None


def test_no_constant_the_test_imports_or_not_the_crashs_input_passes() -> None:
    other = {"pos": [encode("visitor")], "kw": []}
    assert changed_input([change("accounts/samples.py", SAMPLES_OLD, SAMPLES_NEW)], FROM_IMPORT, other, "d") is None
    not_imported = "from accounts.emails import domain\n\n\ndef test_guest():\n    assert domain('guest') == ''\n"
    assert changed_input([change("accounts/samples.py", SAMPLES_OLD, SAMPLES_NEW)], not_imported, TESTED, "d") is None
    code = change("accounts/render.py", "def render(name):\n    return name\n",
                  "def render(name):\n    return name + '@localhost'\n")
    assert changed_input([code], FROM_IMPORT, TESTED, "d") is None, "a caller's fix changes no constant"
    in_tests = change("tests/samples.py", SAMPLES_OLD, SAMPLES_NEW)
    assert changed_input([in_tests], FROM_IMPORT.replace("accounts.samples", "tests.samples"), TESTED, "d") is None, \
        "a test file's change is the policy's"
