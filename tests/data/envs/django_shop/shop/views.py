from django.http import JsonResponse

from shop.models import Order


def unit_price(request, pk):
    order = Order.objects.get(pk=pk)
    return JsonResponse({"unit_price": order.unit_price()})
