import asyncio

from pkg.code import (
    Box,
    Registry,
    build,
    decorated,
    during,
    fetch,
    load,
    make_divider,
    outer,
    with_genexpr,
    with_lambda,
    with_listcomp,
)


def test_outer():
    def local_helper():
        return []
    assert outer(local_helper())


def test_decorated():
    decorated({})


def test_lambda():
    with_lambda([0])


def test_listcomp():
    with_listcomp([0])


def test_genexpr():
    with_genexpr([0])


class TestBox:
    def test_first(self):
        Box([]).first()


def test_chained():
    load({})


def test_during():
    during({})


def test_closure():
    make_divider(0)(1)


def test_static():
    Registry.make({})


def test_async():
    asyncio.run(fetch({}))


def test_class_body():
    build()
