"""The curators' admin: keep listings true, record sources, review new SKUs, watch refresh runs.

Curated rows (Provider, GpuModel, InstanceType, GpuLink, Fabric) lock every field a curator edits,
so `load_catalog` and the scrapers never overwrite a hand correction; `locked_fields` is shown as
ticks over the model's own field names so a curator can unlock one. Scraper-owned values (derived
prices, last-seen bookkeeping, refresh runs, price history) are read-only here.
"""

from django.contrib import admin

# Importing the modules registers their ModelAdmins.
from offerings.admin import catalog, instances, prices, queues  # noqa: F401

admin.site.site_header = "gpucatalog curation"
admin.site.site_title = "gpucatalog admin"
admin.site.index_title = "Catalog curation"
