from django.apps import AppConfig


class OfferingsConfig(AppConfig):
    name = "offerings"
    verbose_name = "Catalog"
