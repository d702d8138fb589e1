import django.contrib.postgres.fields
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("offerings", "0009_undated_prices"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="offer", name="offer_kind_valid"),
        migrations.AlterField(
            model_name="offer",
            name="kind",
            field=models.CharField(
                choices=[
                    ("on-demand", "On-demand"),
                    ("spot", "Spot / interruptible"),
                    ("reserved", "Reserved"),
                    ("capacity-block", "Capacity Block"),
                ],
                max_length=20,
            ),
        ),
        migrations.AlterField(
            model_name="instancetype",
            name="offer_kinds",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(max_length=20), blank=True, default=list, editable=False
            ),
        ),
        migrations.AddConstraint(
            model_name="offer",
            constraint=models.CheckConstraint(
                condition=models.Q(("kind__in", ["on-demand", "spot", "reserved", "capacity-block"])),
                name="offer_kind_valid",
                violation_error_message="Choose on-demand, spot, reserved or capacity-block.",
            ),
        ),
    ]
