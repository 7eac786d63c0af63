# The framework run and thread ids on each event: shown and filtered on the event feed.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0006_gateways"),
    ]

    operations = [
        migrations.AddField(
            model_name="event",
            name="run_id",
            field=models.CharField(blank=True, max_length=128),
        ),
        migrations.AddField(
            model_name="event",
            name="thread_id",
            field=models.CharField(blank=True, max_length=128),
        ),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(fields=["organisation", "thread_id", "at"], name="event_thread_at"),
        ),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(fields=["organisation", "run_id", "at"], name="event_run_at"),
        ),
    ]
