"""A tiny listing endpoint."""

from shop.pagination import page, page_count

PRODUCTS = [f"product-{n}" for n in range(25)]


def list_products(number: int, size: int = 10) -> dict:
    return {"items": page(PRODUCTS, number, size), "pages": page_count(len(PRODUCTS), size)}
