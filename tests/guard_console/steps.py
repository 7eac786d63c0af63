"""A secondary step for the worker tests: an audit trail that is down while a flag file exists.

It runs in the test process and in a real `celery worker` process, so its state is in files named
by the environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def audit_trail(result: Any, context: dict[str, Any]) -> None:
    if Path(os.environ["STALWART_TEST_AUDIT_DOWN"]).exists():
        raise ConnectionError("the audit service does not answer")
    with open(os.environ["STALWART_TEST_AUDIT_LOG"], "a") as out:
        out.write(f"{context['key']}\n")
