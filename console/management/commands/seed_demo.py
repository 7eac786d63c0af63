"""Create (or refresh) the demo organisation with one person per role, and print how to sign in.

Idempotent: run twice, it refreshes the people and adds only what is missing (`make run` runs it
every time). Besides the people it leaves what each page needs to show something real: events, a
published firewall policy, two compiled versions of the shop's rulebook (the compare page diffs
them), the shop's desk run through the executor (a refund waiting for approval), and the shop's
agents proved by the proof engine in process (the body of the Celery task), so the Proofs page
has a finished job with its findings.
"""

from __future__ import annotations

import datetime as dt
import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from console import services
from console.models import Event, Membership, Organisation, Role

DEMO_SLUG = "demo"
DEMO_EVENTS = [
    (
        "firewall",
        "desk",
        "shell.exec",
        "tool_call",
        "refuse",
        "deny",
        ["rule: no rm -rf"],
        "no rm -rf",
    ),
    ("toolcheck", "desk", "get_order", "tool_call", "allow", "", ["allow"], ""),
    ("toolcheck", "billing", "refund_card", "tool_call", "confirm", "", ["write"], ""),
    ("toolcheck", "billing", "refund_card", "tool_call", "refuse", "", ["refuse"], "refunds"),
    ("firewall", "desk", "http.fetch", "egress", "refuse", "deny", ["rule: ssrf"], "ssrf"),
]


class Command(BaseCommand):
    help = "Create the demo organisation with an admin, an editor, an approver and an auditor."

    def handle(self, *args, **options) -> None:  # noqa: ANN002, ANN003
        password = os.environ.get("STALWART_DEMO_PASSWORD", "stalwart-demo")
        with transaction.atomic():
            organisation = Organisation.objects.filter(slug=DEMO_SLUG).first()
            if organisation is None:
                organisation = services.organisation_create(name="Demo Shop", slug=DEMO_SLUG)
            user_model = get_user_model()
            people = []
            for role in Role.values:
                username = f"demo-{role}"
                user, _ = user_model.objects.get_or_create(
                    username=username, defaults={"email": f"{username}@demo.invalid"}
                )
                user.set_password(password)
                user.save()
                Membership.objects.update_or_create(
                    user=user, organisation=organisation, defaults={"role": role}
                )
                people.append((role, username))
            if not Event.objects.filter(organisation=organisation).exists():
                now = timezone.now()
                for i, (source, agent, tool, stage, decision, verdict, reasons, rule) in enumerate(
                    DEMO_EVENTS
                ):
                    event = services.event_record(
                        organisation=organisation,
                        source=source,
                        decision=decision,
                        session="demo-session-1",
                        agent=agent,
                        tool=tool,
                        stage=stage,
                        verdict=verdict,
                        reasons=reasons,
                        rule=rule,
                        detail={"arguments": {"order_id": "4411"}},
                    )
                    Event.objects.filter(pk=event.pk).update(
                        at=now - dt.timedelta(minutes=5 * (len(DEMO_EVENTS) - i))
                    )
            self._policy_and_rulebook(organisation)
            self._executor_runs(organisation)
        # Outside the transaction above: a proof claims its job and writes its result in
        # transactions of its own, as it does on a worker.
        self._proof_job(organisation)
        self._alert(organisation)
        self.stdout.write(f"Demo organisation `{organisation.name}` is ready. Sign in with:")
        for role, username in people:
            self.stdout.write(f"  {role:9} {username:16} password: {password}")

    def _policy_and_rulebook(self, organisation) -> None:  # noqa: ANN001
        """A firewall policy (with a sequence rule) and the shop's rulebook, once."""
        from pathlib import Path

        from django.conf import settings

        from console.access import Actor
        from firewall import services as firewall_services
        from firewall.models import Policy
        from rulebooks import services as rulebook_services
        from rulebooks.models import Rulebook

        actor = Actor(organisation=organisation, role="admin", label="seed_demo")
        if not Policy.objects.filter(organisation=organisation).exists():
            firewall_services.policy_import(actor=actor, data=DEMO_POLICY)
            policy = Policy.objects.get(organisation=organisation, name=DEMO_POLICY["name"])
            firewall_services.preset_apply(actor=actor, policy=policy, preset="tight")
            firewall_services.policy_publish(actor=actor, policy=policy, note="the demo's policy")
        first = (Path(settings.SITE_DIR) / "examples" / "shop" / "policy.co").read_bytes()
        versions = [first, first + DEMO_RULEBOOK_V2_ADDS.encode()]
        rulebook = Rulebook.objects.filter(organisation=organisation, name="shop").first()
        have = rulebook.versions.count() if rulebook is not None else 0
        if rulebook is None and Rulebook.objects.filter(organisation=organisation).exists():
            return  # the organisation keeps rulebooks of its own: leave them as they are
        for data in versions[have:]:
            rulebook_services.rulebook_upload(
                actor=actor, name="shop", data=data, filename="policy.co"
            )

    def _executor_runs(self, organisation) -> None:  # noqa: ANN001
        """The shop's desk through the executor, once: a read, a refund the model priced waiting
        in the approvers' queue, and a refund refused by its schema — so the Tools and Approvals
        pages have something to show."""
        from pathlib import Path

        from django.conf import settings
        from django.contrib.auth import get_user_model

        from console.access import Actor
        from guard.executor import Executor, ToolBinding
        from guard.models import GuardSession
        from guard.services import session_create
        from stalwart_agents import Agent

        if GuardSession.objects.filter(organisation=organisation).exists():
            return
        shop = Agent.from_file(
            Path(settings.SITE_DIR) / "examples" / "shop" / "agent.yaml", verify=False
        )
        editor = get_user_model().objects.get(username="demo-editor")
        actor = Actor(
            organisation=organisation, role="editor", label="user:demo-editor", user_id=editor.pk
        )
        session = session_create(
            actor=actor, agent="billing", catalogue=shop.catalogue(), rulebook=shop.rules().record
        )
        from shop import tools as shop_tools  # on sys.path once the agent file was read

        executor = Executor(
            actor=actor,
            session=session,
            bindings={
                "refund_card": ToolBinding(
                    lambda arguments, context: shop_tools.refund_card(**arguments)
                ),
            },
        )
        origins = {"order_id": "typed", "amount": "model"}
        executor.call(
            "refund_card",
            {"order_id": "4411", "amount": 40.0},
            origins=origins,
            context={"order_paid": True},
        )
        executor.call(
            "refund_card",
            {"order_id": "4411", "amount": -5},
            origins=origins,
            context={"order_paid": True},
        )

    def _alert(self, organisation) -> None:  # noqa: ANN001
        """The demo policy's "exfil chain" completed once, so the feed and the Alerts page have an
        alert to show: 50 CRM reads, an export and an egress call decided by the firewall as
        `POST /v1/firewall/evaluate` decides them, then matched by the sequence matcher the
        worker runs (which also holds that session, as the rule says). Outside the transaction
        above, as the matcher runs on a worker."""
        from console.access import Actor
        from console.models import SHARDS
        from firewall import matching
        from firewall import services as firewall_services

        if Event.objects.filter(organisation=organisation, is_alert=True).exists():
            return
        if firewall_services.active_policy(organisation=organisation) is None:
            return  # the organisation keeps a policy of its own, without the demo's rule
        actor = Actor(organisation=organisation, role="admin", label="seed_demo")
        session = {"agent": "desk", "session": "demo-exfil-1"}
        calls = [{"tool": "crm.read", "arguments": {"customer": f"c-{i}"}} for i in range(50)]
        calls.append({"tool": "crm.export", "arguments": {"format": "csv"}})
        calls.append(
            {"tool": "http.post", "stage": "egress", "destination": "https://paste.example.net/u"}
        )
        for call in calls:
            firewall_services.firewall_evaluate(actor=actor, call={**call, **session})
        for shard in range(SHARDS):
            while matching.drain_shard(shard):
                pass

    def _proof_job(self, organisation) -> None:  # noqa: ANN001
        """The shop's agents proved once, as an editor submits them from the Proofs page: the
        job is queued by the service the page calls and proved here by `proof_job_run`, the body
        of the worker's task (a worker that later takes the task finds it finished)."""
        from pathlib import Path

        from django.conf import settings
        from django.contrib.auth import get_user_model

        from console.access import Actor
        from proof.models import ProofJob
        from proof.services import proof_job_run, proof_job_submit
        from stalwart_agents import Agent

        editor = get_user_model().objects.get(username="demo-editor")
        actor = Actor(
            organisation=organisation, role="editor", label="user:demo-editor", user_id=editor.pk
        )
        job = ProofJob.objects.filter(
            organisation=organisation, name=DEMO_PROOF_NAME, submitted_by=actor.label
        ).first()
        if job is None:
            shop = Agent.from_file(
                Path(settings.SITE_DIR) / "examples" / "shop" / "agent.yaml", verify=False
            )
            body = {
                "graph": shop.export(),
                "catalogue": shop.catalogue(),
                "rulebook": shop.rules().record,
                "name": DEMO_PROOF_NAME,
            }
            job = proof_job_submit(actor=actor, body=body)
        if not job.finished:
            proof_job_run(job_id=job.pk)


#: The label of the demo's proof job (the shop's agents, as `examples/shop/agent.yaml` has them).
DEMO_PROOF_NAME = "shop"
#: What the second version of the shop's rulebook adds to `examples/shop/policy.co`: a charge runs
#: only for an order with a card on file.
DEMO_RULEBOOK_V2_ADDS = """
define user ask charge
  "cobre o pedido 4411"
  "charge the card of order 4411"

define flow charges
  user ask charge
  if $card_on_file
    execute charge_card
  else
    bot refuse
"""

DEMO_POLICY = {
    "name": "production",
    "default_verdict": "allow",
    "rules": [
        {
            "priority": 10,
            "name": "no rm -rf",
            "stage": "tool_call",
            "tool_name_glob": "shell.*",
            "args_match": [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}],
            "verdict": "deny",
            "notes": "never let an agent wipe a disk",
        },
        {
            "priority": 20,
            "name": "scrub",
            "tool_name_glob": "*.send",
            "verdict": "sanitize",
            "sanitize": {"presets": ["email", "credit_card"], "patterns": ["ACME-[0-9]{6}"]},
        },
        {
            "priority": 40,
            "name": "budget",
            "tool_name_glob": "llm.*",
            "verdict": "cap_cost",
            "cap_cost_cents": 500,
        },
        {
            "priority": 50,
            "name": "exfil chain",
            "verdict": "audit",
            "sequence": {
                "steps": [
                    {"tool_glob": "crm.read", "min_count": 50},
                    {"tool_glob": "*.export"},
                    {"tool_glob": "*", "egress": True},
                ],
                "window_seconds": 600,
                "on_match": ["hold_session"],
            },
        },
    ],
}
