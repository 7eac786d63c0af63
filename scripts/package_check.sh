#!/usr/bin/env bash
# The package as a new user gets it (`make test-package`, part of `make test`): build the wheel and
# the sdist, install each into a fresh virtual environment outside the checkout, and run there what
# README.md's Deployment section says: `stalwart --help`, `stalwart verify` and the shop example
# with no Django installed; then, with `[console]`, migrations, the first admin, the production
# server with a worker and the beat, the probes, a sign-in and the pages with their stylesheet.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
BASE_PYTHON=${BASE_PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/stalwart-package-XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
step() { echo "package: $*"; }
pip_quiet() { "$@" --quiet --disable-pip-version-check 2>&1 | grep -v "^WARNING: Location" || true; }

step "building the wheel and the sdist"
"$PY" -m build --outdir "$WORK/dist" "$ROOT" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; exit 1; }
wheel=$(ls "$WORK"/dist/stalwart-*.whl)
sdist=$(ls "$WORK"/dist/stalwart-*.tar.gz)

# Run from a folder of its own, so that nothing of the checkout is importable.
mkdir -p "$WORK/run"
cp -r "$ROOT/examples/shop" "$WORK/run/shop"
cd "$WORK/run"

for artifact in "$wheel" "$sdist"; do
  venv="$WORK/venv-$(basename "$artifact" | sed 's/.*\.\(whl\|tar\.gz\)$/\1/')"
  step "installing $(basename "$artifact") into a fresh virtual environment"
  "$BASE_PYTHON" -m venv "$venv"
  pip_quiet "$venv/bin/pip" install "$artifact"
  if "$venv/bin/python" -c 'import django' 2>/dev/null; then
    echo "package: FAILED: the bare install brought Django"; exit 1
  fi
  "$venv/bin/stalwart" --help >/dev/null
  step "stalwart verify on the shop"
  "$venv/bin/stalwart" verify shop/agent.yaml | tail -n 1
  step "the shop example"
  "$venv/bin/python" shop/main.py
  set +e
  message=$("$venv/bin/stalwart" console manage check 2>&1)
  code=$?
  set -e
  if [ "$code" != 2 ] || [ "$(printf '%s\n' "$message" | wc -l)" != 1 ] \
     || ! grep -q "pip install 'stalwart\[console\]'" <<<"$message"; then
    echo "package: FAILED: without the extra, \`stalwart console\` said ($code): $message"; exit 1
  fi
  step "without the console extra: $message"
done

venv="$WORK/venv-whl"
step "installing the wheel with [console]"
pip_quiet "$venv/bin/pip" install "$wheel[console]"
export PATH="$venv/bin:$PATH"
# What a deployment sets (README.md, Deployment); the embedded broker and SQLite in the var folder.
export STALWART_SECRET_KEY
STALWART_SECRET_KEY=$("$venv/bin/python" -c 'import secrets; print(secrets.token_urlsafe(64))')
export STALWART_ALLOWED_HOSTS=127.0.0.1,localhost
export STALWART_VAR_DIR="$WORK/var"
export STALWART_ADMIN_PASSWORD="package-check-$RANDOM-password"
unset DATABASE_URL REDIS_URL DJANGO_SETTINGS_MODULE
port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
step "migrations, static files and the first admin"
stalwart console manage migrate --noinput >/dev/null
stalwart console manage collectstatic --noinput >/dev/null
stalwart console manage check --deploy --fail-level WARNING
stalwart console manage organisation_create --slug acme --name "Acme" --admin alice
step "serving under gunicorn at 127.0.0.1:$port with a worker and the beat"
stalwart console serve --bind "127.0.0.1:$port" --workers 2 >"$WORK/web.log" 2>&1 &
pids+=($!)
stalwart console worker --concurrency 1 >"$WORK/worker.log" 2>&1 &
pids+=($!)
stalwart console beat >"$WORK/beat.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 60); do
  "$venv/bin/python" -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 1
done
if ! "$venv/bin/python" "$ROOT/scripts/package_smoke.py" "http://127.0.0.1:$port" alice "$STALWART_ADMIN_PASSWORD"; then
  for log in web worker beat; do echo "--- $log.log"; tail -n 30 "$WORK/$log.log"; done
  exit 1
fi
step "passed"
