"""The one place that writes catalog data: curated fixtures, scraped offers, refresh runs,
reference rates and the curators' edits made in the admin.

Every write goes through here so the rules hold everywhere: locked fields are never
overwritten, a price observation is appended only when the price changes, an older price never
replaces a newer one, and money is converted to USD at a dated reference rate. Callers use the
names below; `tests/test_one_writer.py` fails if a module elsewhere writes catalog rows.
"""

from offerings.writer.curated import load_catalog
from offerings.writer.curation import (
    ignore_skus,
    lock_all_fields,
    lockable_fields,
    mark_verified,
    merge_locks,
    save_curator_offer,
    set_hidden,
    unlock_all_fields,
)
from offerings.writer.offers import MAX_GPU_HOUR_USD, MIN_GPU_HOUR_USD, upsert_offers
from offerings.writer.rates import record_reference_rates, reprice_in_usd
from offerings.writer.runs import (
    ensure_price_source,
    fail_scrape_run,
    note_retry_scheduled,
    record_skipped_run,
    start_scrape_run,
)

__all__ = [
    "MAX_GPU_HOUR_USD",
    "MIN_GPU_HOUR_USD",
    "ensure_price_source",
    "fail_scrape_run",
    "ignore_skus",
    "load_catalog",
    "lock_all_fields",
    "lockable_fields",
    "mark_verified",
    "merge_locks",
    "note_retry_scheduled",
    "record_reference_rates",
    "record_skipped_run",
    "reprice_in_usd",
    "save_curator_offer",
    "set_hidden",
    "start_scrape_run",
    "unlock_all_fields",
    "upsert_offers",
]
