from shop.api import list_products
from shop.pagination import page, page_count


def test_page_count():
    assert page_count(25, 10) == 3
    assert page_count(20, 10) == 2


def test_first_page():
    assert page(list(range(25)), 1, 10) == list(range(10))


def test_last_page():
    assert list_products(3)["items"] == [f"product-{n}" for n in range(20, 25)]
