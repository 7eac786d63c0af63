#!/usr/bin/env bash
# Serve the console at 127.0.0.1:$PORT (8000) with a Celery worker and its beat (the outbox sweeper),
# each supervised: one that dies is logged and started again (console/supervise.py). Ctrl-C stops all.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
export PATH="$PWD/$VENV/bin:$PATH"
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-console.settings.dev}
export PORT=${PORT:-8000}
echo "Console: http://127.0.0.1:$PORT/  (web, worker and beat: scripts/Procfile.dev)"
exec python -m console.supervise scripts/Procfile.dev
