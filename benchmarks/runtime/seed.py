"""The benchmark's console: `benchmarks.http.seed`'s organisation, key and policy, and the
organisation's bundle public key, printed as one JSON line for the harness.

`python -m benchmarks.runtime.seed switch AGENT TOOL` switches the tool off for the agent, as a
sequence rule's `disable_tool` does, and prints the wall-clock time it committed at.
"""

from __future__ import annotations

import json
import sys
import time

from benchmarks.http import seed


def main() -> dict:
    seeded = seed.main(0)
    from console.bundles import public_key
    from console.models import Organisation

    seeded["public_key"] = public_key(Organisation.objects.get(slug="bench").pk)
    return seeded


def switch(agent: str, tool: str) -> dict:
    import django

    django.setup()
    from console.models import Organisation, ToolSwitch

    ToolSwitch.objects.create(
        organisation=Organisation.objects.get(slug="bench"),
        agent=agent,
        tool=tool,
        reason="benchmark",
    )
    return {"committed_at": time.time()}


if __name__ == "__main__":
    if sys.argv[1:2] == ["switch"]:
        print(json.dumps(switch(sys.argv[2], sys.argv[3])))
    else:
        print(json.dumps(main()))
