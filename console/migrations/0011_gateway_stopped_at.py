from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("console", "0010_bundle_key_generations")]

    operations = [
        migrations.AddField(
            model_name="gateway",
            name="stopped_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
