from django.db import models


class Order(models.Model):
    quantity = models.IntegerField()
    price_cents = models.IntegerField()

    def unit_price(self):
        return self.price_cents / self.quantity
