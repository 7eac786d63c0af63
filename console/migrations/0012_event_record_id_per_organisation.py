"""A decision-log record's id is unique within its organisation, not across all of them: another
organisation's key sending an id first neither hides a record nor learns that it was sent."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0011_gateway_stopped_at"),
    ]

    operations = [
        migrations.AddConstraint(
            model_name="event",
            constraint=models.UniqueConstraint(
                fields=("organisation", "record_id"), name="one_event_per_record_id"
            ),
        ),
        migrations.AlterField(
            model_name="event",
            name="record_id",
            field=models.UUIDField(blank=True, editable=False, null=True),
        ),
    ]
