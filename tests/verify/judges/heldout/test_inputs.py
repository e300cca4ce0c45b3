"""The test's input changed by the diff in a package module (verify/judges/heldout/inputs.py): which names a test
imports from the
repository, and the refusal where one held the crash's own argument on the base and another value with the diff
(tests/verify/judges/heldout/test_judge.py and the corpus see the box read them on real Docker)."""

from __future__ import annotations

from patcher.verify.judges.heldout.inputs import changed_input, imported_names
from sandbox.plain import encode

FILES = {"accounts/__init__.py", "accounts/emails.py", "accounts/samples.py", "tests/test_emails.py",
         "tests/helpers.py", "tests/__init__.py"}
TESTED = {"pos": [encode("guest")], "kw": []}
GUEST = ("accounts.samples", "GUEST")


def test_the_names_a_test_imports_from_the_repositorys_own_modules() -> None:
    test = ("import os\nimport accounts.samples as s\nfrom accounts import samples\nfrom accounts.emails import domain"
            "\nfrom accounts.samples import ADMIN\nfrom tests.helpers import make\n\n\ndef test_guest():\n"
            "    assert domain(samples.GUEST) == s.GUEST_DOMAIN and os.sep\n")
    assert sorted(imported_names(test, FILES)) == [("accounts.emails", "domain"), ("accounts.samples", "ADMIN"),
                                                   ("accounts.samples", "GUEST"),
                                                   ("accounts.samples", "GUEST_DOMAIN")]
    assert imported_names("def broken(:\n", FILES) == []


def test_a_value_that_held_the_crashs_input_and_changed_with_the_diff_refuses() -> None:
    got = changed_input({GUEST: encode("guest")}, {GUEST: encode("guest@localhost")}, TESTED, "domain('guest')")
    assert got is not None and got.refuses and got.reason == "policy_violation"
    assert got.quote == "accounts.samples.GUEST is 'guest' on the base and 'guest@localhost' with the diff; " \
                        "domain('guest') still crashes"


def test_an_unchanged_value_or_one_that_is_not_the_crashs_input_passes() -> None:
    assert changed_input({GUEST: encode("guest")}, {GUEST: encode("guest")}, TESTED, "d") is None
    other = ("accounts.samples", "ADMIN")
    assert changed_input({other: encode("a@b")}, {other: encode("c@d")}, TESTED, "d") is None
    assert changed_input({GUEST: encode("guest")}, {}, TESTED, "d") is None, "not read with the diff"


def test_the_values_a_test_reads_below_an_imported_name_by_constant_keys_and_attributes() -> None:
    files = {"orders/__init__.py", "orders/samples.py", "orders/total.py", "tests/test_total.py"}
    test = ("from orders import samples\nfrom orders.samples import BASKET as B\nfrom orders.total import total\n\n\n"
            "def test_total(key):\n    assert total(B['items'], B['coupon']) == 7.0\n"
            "    assert total(samples.BASKET['items'][0], samples.USER.coupon) and B[key]\n")
    got = imported_names(test, files)
    assert ("orders.samples", "BASKET", (("i", "coupon"),)) in got
    assert ("orders.samples", "BASKET", (("i", "items"), ("i", 0))) in got
    assert ("orders.samples", "USER", (("a", "coupon"),)) in got
    assert ("orders.samples", "BASKET") in got and not any(len(r) > 2 and r[1] == "key" for r in got), got


def test_an_entry_below_a_name_that_held_the_crashs_input_and_changed_refuses() -> None:
    coupon = ("orders.samples", "BASKET", (("i", "coupon"),))
    tested = {"pos": [encode([["pen", 2]]), encode(None)], "kw": []}
    got = changed_input({coupon: encode(None)}, {coupon: encode(0)}, tested, "total([['pen', 2]], None)")
    assert got is not None and got.reason == "policy_violation", got
    assert got.quote.startswith("orders.samples.BASKET['coupon'] is None on the base and 0 with the diff"), got.quote

