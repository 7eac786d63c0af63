"""Open holds and switches keyed by the normal form of their agent and tool names.

Every entry now looks a hold or a switch up by the normal form (`firewall.engine.names.name_key`:
case-folded), so one stored under another spelling (`Desk`) would stop holding. Each open row is
folded; where two open rows fold to one (`Desk` and `desk` held the same session), the later is
closed, naming the row it was merged into, since the one left open holds exactly what it held.
"""

from django.db import migrations


def forwards(apps, schema_editor):
    from firewall.engine.names import name_key

    SessionHold = apps.get_model("console", "SessionHold")
    ToolSwitch = apps.get_model("console", "ToolSwitch")
    kept: dict[tuple, int] = {}
    for hold in SessionHold.objects.filter(released_at__isnull=True).order_by("id"):
        key = (hold.organisation_id, name_key(hold.agent), hold.session)
        if key in kept:
            hold.released_at = hold.created_at
            hold.released_by = f"merged into hold {kept[key]} (agent names folded)"
            hold.save(update_fields=["released_at", "released_by"])
            continue
        kept[key] = hold.pk
        if hold.agent != key[1]:
            hold.agent = key[1]
            hold.save(update_fields=["agent"])
    kept = {}
    for switch in ToolSwitch.objects.filter(enabled_at__isnull=True).order_by("id"):
        key = (switch.organisation_id, name_key(switch.agent), name_key(switch.tool))
        if key in kept:
            switch.enabled_at = switch.created_at
            switch.enabled_by = f"merged into switch {kept[key]} (names folded)"
            switch.save(update_fields=["enabled_at", "enabled_by"])
            continue
        kept[key] = switch.pk
        if (switch.agent, switch.tool) != key[1:]:
            switch.agent, switch.tool = key[1:]
            switch.save(update_fields=["agent", "tool"])


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0003_audit_checkpoint"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
