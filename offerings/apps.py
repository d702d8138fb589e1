import gc

from django.apps import AppConfig
from django.conf import settings


class OfferingsConfig(AppConfig):
    name = "offerings"
    verbose_name = "Catalog"

    def ready(self) -> None:
        # The collector's thresholds for this process (settings.GC_THRESHOLDS says why).
        gc.set_threshold(*settings.GC_THRESHOLDS)
