#!/usr/bin/env bash
# Serve the console at 127.0.0.1:8000 with one Celery worker (and its beat, the outbox sweeper);
# Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
"$VENV/bin/celery" -A console worker --loglevel=INFO --concurrency=1 \
  --without-mingle --without-gossip --beat --hostname "stalwart-run@%h" &
worker=$!
trap 'kill "$worker" 2>/dev/null || true; wait "$worker" 2>/dev/null || true' EXIT INT TERM
echo "Console: http://127.0.0.1:8000/  (worker pid $worker)"
"$VENV/bin/python" manage.py runserver 127.0.0.1:8000
