from django.test import TestCase

from shop.models import Order


class OrderTests(TestCase):
    def test_unit_price(self):
        order = Order.objects.create(quantity=4, price_cents=1000)
        self.assertEqual(order.unit_price(), 250)

    def test_unit_price_of_an_empty_order(self):
        order = Order.objects.create(quantity=0, price_cents=1000)
        self.assertEqual(order.unit_price(), 0)

    def test_the_view(self):
        order = Order.objects.create(quantity=2, price_cents=300)
        answer = self.client.get(f"/orders/{order.pk}/unit-price")
        self.assertEqual(answer.json(), {"unit_price": 150})
