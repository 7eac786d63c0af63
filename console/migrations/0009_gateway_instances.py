"""One row per gateway instance: two gateways of one name no longer report over each other.

The rows already there are kept, as the instance `""` (a gateway from before instances); the
next report of a gateway that sends its instance makes a row of its own.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0008_event_record_ids"),
    ]

    operations = [
        migrations.AddField(
            model_name="gateway",
            name="instance",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="gateway",
            name="host",
            field=models.CharField(blank=True, default="", max_length=255),
        ),
        migrations.RemoveConstraint(
            model_name="gateway",
            name="one_gateway_per_name",
        ),
        migrations.AlterModelOptions(
            name="gateway",
            options={"ordering": ["name", "instance"]},
        ),
        migrations.AddConstraint(
            model_name="gateway",
            constraint=models.UniqueConstraint(
                fields=("organisation", "name", "instance"), name="one_gateway_per_instance"
            ),
        ),
    ]
