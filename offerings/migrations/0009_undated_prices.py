from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("offerings", "0008_fact_basis"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="priceobservation",
            options={
                "get_latest_by": "observed_at",
                "ordering": [
                    "offer",
                    models.OrderBy(models.F("observed_at"), descending=True, nulls_last=True),
                    "-pk",
                ],
            },
        ),
        migrations.AlterField(
            model_name="offer",
            name="observed_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When this price was read at its source; empty when the source shows no date.",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="priceobservation",
            name="observed_at",
            field=models.DateTimeField(
                blank=True, help_text="Empty when the source shows no date.", null=True
            ),
        ),
    ]
