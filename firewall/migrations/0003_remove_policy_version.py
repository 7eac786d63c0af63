"""The policy's own `version` key goes: the published version's `key` keys compiled copies now.

Its own migration: on PostgreSQL a table whose rows were just updated in a transaction (with
deferred foreign keys) cannot be altered in that same transaction.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("firewall", "0002_policy_versions"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="policy",
            name="version",
        ),
    ]
