"""Each price says who states it: the provider, or a third party (issue 28).

A price a price source supplied (`source` set, SkyPilot's catalog) is a third party's reading;
so is a curated price whose source is SkyPilot's catalog or another third party's copy of the
providers' prices. The next `load_catalog` sets the curated ones from their fixtures' `basis`.
"""

from django.db import migrations, models

THIRD_PARTY_SOURCES = (
    "https://github.com/skypilot-org/skypilot-catalog/%",
    "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/%",
    "https://github.com/ArthurChiao/%",
    "https://github.com/dstackai/%",
    "https://github.com/kubermates-org/%",
    "https://github.com/ringochen06/%",
)

BACKFILL = (
    "UPDATE offerings_offer SET basis = 'third-party' WHERE source <> '' OR "
    + " OR ".join(f"source_url LIKE '{pattern}'" for pattern in THIRD_PARTY_SOURCES)
)


class Migration(migrations.Migration):

    dependencies = [
        ('offerings', '0021_instance_aliases'),
    ]

    operations = [
        migrations.AddField(
            model_name='offer',
            name='basis',
            field=models.CharField(choices=[('provider', 'Stated by the provider'), ('third-party', 'Third party')], default='provider', help_text='Who states this price at its source: the provider or a third party.', max_length=12),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name='offer',
            constraint=models.CheckConstraint(condition=models.Q(('basis__in', ['provider', 'third-party']), models.Q(('source', ''), ('basis', 'third-party'), _connector='OR')), name='offer_basis_valid', violation_error_message="A price is stated by the provider or by a third party; a price source's reading is a third party's."),
        ),
    ]
