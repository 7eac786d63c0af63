"""The benchmark's console: `benchmarks.http.seed`'s organisation, key and policy, and the
organisation's bundle public key, printed as one JSON line for the harness."""

from __future__ import annotations

import json

from benchmarks.http import seed


def main() -> dict:
    seeded = seed.main(0)
    from console.bundles import public_key
    from console.models import Organisation

    seeded["public_key"] = public_key(Organisation.objects.get(slug="bench").pk)
    return seeded


if __name__ == "__main__":
    print(json.dumps(main()))
