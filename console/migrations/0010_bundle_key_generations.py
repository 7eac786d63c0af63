"""Bundle key generations: an admin rotates an organisation's bundle key (`rotate_bundle_key`)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0009_gateway_instances"),
    ]

    operations = [
        migrations.CreateModel(
            name="BundleKeyGeneration",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("generation", models.PositiveIntegerField()),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("created_by", models.CharField(blank=True, max_length=200)),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="bundle_keys",
                        to="console.organisation",
                    ),
                ),
            ],
            options={"ordering": ["organisation", "-generation"]},
        ),
        migrations.AddConstraint(
            model_name="bundlekeygeneration",
            constraint=models.UniqueConstraint(
                fields=("organisation", "generation"), name="one_bundle_key_per_generation"
            ),
        ),
    ]
