from django.urls import path

from shop import views

urlpatterns = [path("orders/<int:pk>/unit-price", views.unit_price)]
