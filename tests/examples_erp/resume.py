"""A process of its own that resumes one confirmed call of the ERP's supervisor, then says how.

    python -m tests.examples_erp.resume '{"organisation": ..., "username": ..., "role": ...,
                                          "session": ..., "outcome": {...}}'

The integration tests start it against the test database (STALWART_DATABASE_NAME) and the ERP's
file (STALWART_ERP_PATH): once with the ERP set to crash right after its effect, once more after.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.test")
    import django

    django.setup()
    from console.access import Actor
    from console.models import Organisation
    from examples.erp import tools
    from guard.executor import Executor
    from guard.models import GuardSession

    given = json.loads(sys.argv[1])
    organisation = Organisation.objects.get(slug=given["organisation"])
    actor = Actor(
        organisation=organisation,
        role=given["role"],
        label=f"user:{given['username']}",
        user_id=given["user_id"],
    )
    session = GuardSession.objects.get(public_id=given["session"])
    executor = Executor(actor=actor, session=session, bindings=tools.bindings())
    print(json.dumps(executor.resume(given["outcome"]), default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
