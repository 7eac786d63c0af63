"""Screenshots of every console page at 1440×900 and 390×844, for the README's console section.

`make screenshots` runs this: a throwaway SQLite database with `make run`'s demo data, the console
under `make run`'s own settings on a free port, and Debian's Chromium signed in as the demo admin
(and the demo auditor, whose pages are read-only). The pictures go to `docs/screenshots/`.
Names of pages as arguments (`scripts/screenshots.py proof rulebook-compare`, or
`make screenshots PAGES="proof rulebook-compare"`) take only those.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = os.environ.get("STALWART_CHROMIUM", "/usr/bin/chromium")
PASSWORD = os.environ.get("STALWART_DEMO_PASSWORD", "stalwart-demo")
SIZES = {"desktop": (1440, 900), "phone": (390, 844)}
#: (file stem, person, path): the demo admin sees every page, the auditor the read-only ones.
PAGES = [
    ("dashboard", "demo-admin", "/"),
    ("settings", "demo-admin", "/settings/"),
    ("firewall", "demo-admin", "/firewall/"),
    ("policy", "demo-admin", "/firewall/{policy}/"),
    ("policy-versions", "demo-admin", "/firewall/{policy}/diff"),
    ("policy-version", "demo-auditor", "/firewall/{policy}/versions/1/"),
    ("rule-editor", "demo-admin", "/firewall/rules/{rule}/"),
    ("rule-auditor", "demo-auditor", "/firewall/rules/{rule}/"),
    ("rulebooks", "demo-admin", "/rulebooks/"),
    ("rulebook", "demo-admin", "/rulebooks/{rulebook}/"),
    ("rulebook-version", "demo-admin", "/rulebooks/{rulebook}/v/1/"),
    ("rulebook-compare", "demo-admin", "/rulebooks/{rulebook}/compare?a=1&b=2"),
    ("proofs", "demo-admin", "/proofs/"),
    ("proof", "demo-admin", "/proofs/{proof}/"),
    ("proof-rules", "demo-admin", "/proofs/rules/"),
    ("proof-rule", "demo-admin", "/proofs/rules/QG011"),
    ("approvals", "demo-approver", "/approvals/"),
    ("tools", "demo-admin", "/tools/"),
    ("try-a-turn", "demo-admin", "/try/"),
    ("events", "demo-auditor", "/events/"),
    ("event", "demo-auditor", "/events/{event}/"),
    ("alert", "demo-auditor", "/events/{alert}/"),
    ("audit", "demo-auditor", "/audit/"),
    ("people", "demo-admin", "/members/"),
    ("invitations", "demo-admin", "/invitations/"),
    ("gateways", "demo-admin", "/gateways/"),
    ("api-keys", "demo-admin", "/api-keys/"),
    ("health", "demo-admin", "/health/"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def main(argv: list[str]) -> int:
    unknown = sorted(set(argv) - {stem for stem, _, _ in PAGES})
    if unknown:
        print(f"no such page: {', '.join(unknown)}", file=sys.stderr)
        return 2
    pages = [p for p in PAGES if not argv or p[0] in argv]
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as var:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "console.settings.dev",
            "STALWART_VAR_DIR": var,
        }
        env.pop("DATABASE_URL", None)
        env.pop("REDIS_URL", None)
        _manage(env, "migrate", "--noinput")
        _manage(env, "seed_demo")
        ids = (
            _manage(
                env,
                "shell",
                "-c",
                (
                    "from firewall.models import Policy; from rulebooks.models import Rulebook; "
                    "from console.models import Event; from proof.models import ProofJob; "
                    "p = Policy.objects.order_by('id').first(); "
                    "e = Event.objects.exclude(detail={}).filter(is_alert=False).order_by('-id').first(); "
                    "print('ids', p.pk, p.rules.order_by('priority', 'id').first().pk, "
                    "Rulebook.objects.order_by('id').first().pk, e.pk, "
                    "ProofJob.objects.filter(report__isnull=False).get().public_id, "
                    "Event.objects.filter(is_alert=True).order_by('id').first().pk)"
                ),
            )
            .split("ids ", 1)[1]
            .split()
        )
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"{base}/accounts/login/", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
                )
                for size, (width, height) in SIZES.items():
                    for person in sorted({p for _, p, _ in pages}):
                        context = browser.new_context(
                            base_url=base, viewport={"width": width, "height": height}
                        )
                        page = context.new_page()
                        page.goto("/accounts/login/")
                        page.fill("#id_username", person)
                        page.fill("#id_password", PASSWORD)
                        page.click("button[type=submit]")
                        page.wait_for_url("**/")
                        for stem, who, path in pages:
                            if who != person:
                                continue
                            page.goto(
                                path.format(
                                    policy=ids[0],
                                    rule=ids[1],
                                    rulebook=ids[2],
                                    event=ids[3],
                                    proof=ids[4],
                                    alert=ids[5],
                                )
                            )
                            page.wait_for_load_state("networkidle")
                            page.screenshot(path=str(OUT / f"{stem}-{size}.png"), full_page=False)
                            print(f"{stem}-{size}.png")
                        context.close()
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
