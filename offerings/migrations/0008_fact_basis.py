from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("offerings", "0007_offer_kind_region_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="instancetype",
            name="gpu_basis",
            field=models.CharField(
                choices=[
                    ("provider", "Stated by the provider"),
                    ("platform", "Follows from the vendor's platform"),
                    ("third-party", "Third party"),
                ],
                default="provider",
                help_text="Third party when the provider never names the GPU (Alibaba gn8v).",
                max_length=12,
                verbose_name="basis of the GPU model",
            ),
        ),
        migrations.AddField(
            model_name="gpulink",
            name="basis",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Field name -> basis (provider, platform or third-party) of each known link fact; an unknown field has no key.",
            ),
        ),
        migrations.AddField(
            model_name="gpulink",
            name="platform_rules",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Field name -> the platform rule (offerings.platform) a platform fact follows from.",
            ),
        ),
        migrations.AddField(
            model_name="fabric",
            name="basis",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Field name -> basis (provider, platform or third-party) of each known fabric fact; an unknown field has no key.",
            ),
        ),
        migrations.AddConstraint(
            model_name="instancetype",
            constraint=models.CheckConstraint(
                condition=models.Q(("gpu_basis__in", ["provider", "platform", "third-party"])),
                name="instance_gpu_basis_valid",
                violation_error_message="Choose provider, platform or third-party.",
            ),
        ),
    ]
