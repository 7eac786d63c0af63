"""A policy's `draft_key`: set by every change to its draft, cleared by a publish; while set, the
draft runs in shadow beside live decisions. Every existing draft is its version 1: no key."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('firewall', '0003_remove_policy_version'),
    ]

    operations = [
        migrations.AddField(
            model_name='policy',
            name='draft_key',
            field=models.UUIDField(blank=True, null=True),
        ),
    ]
