# A row's default price: a price with a USD figure before one without (a currency with no
# reference rate), then dated before undated (0015), so a dated price nobody can convert never
# heads a row over a priced one. Same order as OfferQuerySet.headline_first.

from importlib import import_module

from django.db import migrations

# The function as 0015 wrote it, with one more ORDER BY term in front of its date term.
FUNCTION = import_module("offerings.migrations.0015_headline_dated_first").FUNCTION

FORWARD = FUNCTION % {"undated": "(o.price_per_gpu_hour_usd IS NULL), (o.observed_at IS NULL),"}
BACKWARD = FUNCTION % {"undated": "(o.observed_at IS NULL),"}


class Migration(migrations.Migration):
    dependencies = [("offerings", "0016_scrape_run_replay_of")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
