"""Two gateways of one name are two instances: each its own console row, page card and forget.

Each gateway keeps an instance id beside its pins file (created once, the same after a restart)
and sends it, with its host name, in every report; the console keeps one row per organisation,
gateway name and instance. The migration keeps the rows from before instances.
"""

from __future__ import annotations

import json

import anyio
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.gateway.conftest import server_block

pytestmark = pytest.mark.django_db(transaction=True)


def _folder(root, name: str):  # noqa: ANN001, ANN202
    from stalwart_agents import cli

    folder = root / name
    folder.mkdir()
    path = folder / "gateway.yaml"
    path.write_text("agent: desk\nservers:\n" + server_block("shop"), encoding="utf-8")
    assert cli.main(["gateway", "approve", "--config", str(path)]) == 0
    return path


async def _report_once(path, client):  # noqa: ANN001, ANN202
    from stalwart_agents.gateway import Gateway, load_config

    gateway = Gateway(load_config(path), client=client)
    async with gateway:
        with anyio.fail_after(30):
            while gateway.reporter.sent < 1:
                await anyio.sleep(0.05)
        return dict(gateway.reporter.identity)


def test_two_gateways_of_one_name_are_two_rows_on_the_page_and_forgetting_one_keeps_the_other(
    live_server, people, organisation, actor_for, client_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    from console import services
    from console.models import AuditRow, Gateway
    from stalwart_agents import Client
    from stalwart_agents.gateway import pins

    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(tmp_path / "calls.txt"))
    first, second = _folder(tmp_path, "one"), _folder(tmp_path, "two")
    _, key = services.api_key_create(
        actor=actor_for(people["admin"], organisation), name="gateway", role="editor"
    )

    async def run() -> tuple:
        client = Client(live_server.url, key)
        one = await _report_once(first, client)
        two = await _report_once(second, client)
        again = await _report_once(first, client)  # the first gateway, restarted
        return one, two, again

    one, two, again = anyio.run(run)
    assert one["instance"] != two["instance"]
    assert again == one, "a restarted gateway keeps its instance id"
    assert (
        pins.instance_path(first.parent / "gateway.pins.json").read_text().strip()
        == one["instance"]
    )
    rows = Gateway.objects.filter(organisation=organisation, name="desk")
    assert sorted(rows.values_list("instance", flat=True)) == sorted(
        [one["instance"], two["instance"]]
    )
    assert {row.host for row in rows} == {one["host"]} and one["host"]

    page = client_for(people["auditor"]).get("/gateways/").content.decode()
    assert page.count('data-gateway="desk"') == 2
    assert one["instance"] in page and two["instance"] in page
    assert one["host"] in page

    listed = client_for(people["admin"]).get("/gateways/").content.decode()
    assert listed.count("Forget this gateway instance") == 2
    gone = rows.get(instance=one["instance"])
    assert client_for(people["admin"]).post(f"/gateways/{gone.pk}/forget").status_code == 302
    left = Gateway.objects.filter(organisation=organisation, name="desk")
    assert list(left.values_list("instance", flat=True)) == [two["instance"]]
    audit = AuditRow.objects.get(action="gateway.delete")
    assert audit.changes["instance"] == {"old": one["instance"], "new": None}
    page = client_for(people["auditor"]).get("/gateways/").content.decode()
    assert two["instance"] in page and one["instance"] not in page


def test_the_instance_and_host_of_a_report_are_validated_and_bounded(
    admin, organisation, actor_for, client
) -> None:  # noqa: ANN001
    from console import services
    from console.models import Gateway

    _, key = services.api_key_create(actor=actor_for(admin, organisation), name="gw", role="editor")

    def post(**identity):  # noqa: ANN003, ANN202
        body = {"servers": {}, "events": [], **identity}
        return client.post(
            "/v1/gateways/desk/report",
            json.dumps(body),
            "application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )

    for bad in ("has space", "x" * 65, 7, "-leading", "a\u0000b"):
        refused = post(instance=bad, host="box")
        assert refused.status_code == 400, bad
        assert "instance" in refused.json(), refused.json()
    for bad in ("tab\there", "x" * 256, ["box"], "bell\u0007"):
        refused = post(instance="gw-1", host=bad)
        assert refused.status_code == 400, bad
        assert "host" in refused.json(), refused.json()
    assert not Gateway.objects.exists()
    assert post(instance="gw-1", host="box-1").status_code == 200
    assert post(instance="gw-2", host="box-2").status_code == 200
    assert post().status_code == 200  # a gateway from before instances: the instance ""
    assert sorted(Gateway.objects.values_list("instance", "host")) == [
        ("", ""),
        ("gw-1", "box-1"),
        ("gw-2", "box-2"),
    ]


def _migrate(targets):  # noqa: ANN001, ANN202
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_the_migration_keeps_the_gateways_reported_before_instances() -> None:
    old = _migrate([("console", "0008_event_record_ids")])
    try:
        Organisation = old.get_model("console", "Organisation")
        Gateway = old.get_model("console", "Gateway")
        org = Organisation.objects.create(name="Old", slug="old-gw")
        servers = {"shop": {"state": "connected", "error": "", "tools": []}}
        kept = Gateway.objects.create(organisation=org, name="desk", servers=servers)
        new = _migrate([("console", "0009_gateway_instances")])
        Gateway = new.get_model("console", "Gateway")
        row = Gateway.objects.get(pk=kept.pk)
        assert (row.name, row.instance, row.host, row.servers) == ("desk", "", "", servers)
        Gateway.objects.create(organisation_id=org.pk, name="desk", instance="gw-2")
        assert Gateway.objects.filter(organisation_id=org.pk, name="desk").count() == 2
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
