# Before issue 28, `make run` replayed every recording under tests/providers/recordings/ into the
# catalog, and all but SkyPilot's are hand-built test fixtures, not captures of the providers'
# APIs. Their prices stayed active under the providers' names (AWS p5.48xlarge at the pre-June-2025
# 98.32, citing a price list that was never read). A live scraper run dates every price it reads,
# and those replays dated none, so a provider's own scraped price with no date can only have come
# from such a replay: retire it (never delete: its history stays). SkyPilot's readings and the
# curated catalog's prices are untouched.

from django.db import migrations


def retire_replayed_hand_built_prices(apps, schema_editor):
    Offer = apps.get_model("offerings", "Offer")
    Offer.objects.filter(
        is_active=True, origin="scraper", source="", observed_at__isnull=True, locked_fields=[]
    ).update(is_active=False)


class Migration(migrations.Migration):
    dependencies = [("offerings", "0017_headline_priced_first")]

    operations = [
        migrations.RunPython(retire_replayed_hand_built_prices, migrations.RunPython.noop)
    ]
