#!/usr/bin/env sh
# Create /work/main/.venv-nemo (the NeMo Guardrails oracle for the differential test), idempotently.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
venv="$root/.venv-nemo"
requirements="$here/requirements.txt"
stamp="$venv/.requirements.sha256"
python=${PYTHON:-python3}

want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$venv is up to date"
    exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
"$venv/bin/python" -c "import nemoguardrails.colang.v1_0.lang.parser, nemoguardrails.colang.v2_x.lang.parser"
echo "$want" > "$stamp"
echo "$venv is ready"
