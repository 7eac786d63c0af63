"""Policies as versions: every existing policy's rules become its version 1, published.

The policy's rules stay as its draft, equal to version 1; version 1 takes the policy's former
`version` as its key, so a compiled copy cached under it is still exactly that content.
"""

import hashlib
import json

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.db import migrations, models


def _digest(default_verdict, rules):
    # The same as firewall.runtime.content_digest, copied so that this migration never changes.
    kept = [{k: v for k, v in rule.items() if k != "id"} for rule in rules]
    text = json.dumps(
        {"default_verdict": default_verdict, "rules": kept}, sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(text.encode()).hexdigest()


def publish_every_policy(apps, schema_editor):
    Policy = apps.get_model("firewall", "Policy")
    PolicyVersion = apps.get_model("firewall", "PolicyVersion")
    Rule = apps.get_model("firewall", "Rule")
    for policy in Policy.objects.filter(published__isnull=True).iterator():
        rules = [
            {"id": rule.pk, **rule.spec}
            for rule in Rule.objects.filter(policy=policy).order_by("priority", "id")
        ]
        version = PolicyVersion.objects.create(
            organisation_id=policy.organisation_id,
            policy=policy,
            number=1,
            key=policy.version,
            default_verdict=policy.default_verdict,
            rules=rules,
            digest=_digest(policy.default_verdict, rules),
            note="the policy as it was when versions began",
            published_by="migration",
            published_at=policy.updated_at,
        )
        Policy.objects.filter(pk=policy.pk).update(published=version)


def unpublish(apps, schema_editor):
    Policy = apps.get_model("firewall", "Policy")
    PolicyVersion = apps.get_model("firewall", "PolicyVersion")
    for policy in Policy.objects.exclude(published=None).iterator():
        key = PolicyVersion.objects.get(pk=policy.published_id).key
        Policy.objects.filter(pk=policy.pk).update(version=key)


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0004_holds_and_switches_in_normal_form'),
        ('firewall', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='PolicyVersion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField()),
                ('key', models.UUIDField(default=uuid.uuid4, unique=True)),
                ('default_verdict', models.CharField(max_length=32)),
                ('rules', models.JSONField(default=list)),
                ('digest', models.CharField(max_length=64)),
                ('note', models.CharField(blank=True, max_length=300)),
                ('copied_from', models.PositiveIntegerField(blank=True, null=True)),
                ('published_by', models.CharField(max_length=200)),
                ('published_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='firewall_policy_versions', to='console.organisation')),
                ('policy', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='versions', to='firewall.policy')),
            ],
            options={
                'ordering': ['-number'],
            },
        ),
        migrations.AddField(
            model_name='policy',
            name='published',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='firewall.policyversion'),
        ),
        migrations.AddConstraint(
            model_name='policyversion',
            constraint=models.UniqueConstraint(fields=('policy', 'number'), name='one_number_per_version'),
        ),
        migrations.RunPython(publish_every_policy, unpublish),
    ]
