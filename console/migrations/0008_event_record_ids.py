"""Each decision-log record's id, unique: a batch a runtime sends twice is stored once."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0007_event_framework_ids"),
    ]

    operations = [
        migrations.AddField(
            model_name="event",
            name="record_id",
            field=models.UUIDField(blank=True, editable=False, null=True, unique=True),
        ),
    ]
