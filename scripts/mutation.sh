#!/usr/bin/env bash
# Mutation testing of one engine with mutmut (`make mutation`), then its score and survivors.
#
#   bash scripts/mutation.sh [guard|firewall] [survivors] [mutant-glob ...]
#
# The configuration is `[tool.mutmut]` in pyproject.toml; mutmut works in mutants/ (not in git).
# Without more arguments every mutant of the engine is run again; with globs
# (`guard.engine.canonical.*`) only those are, and with `survivors` only the mutants no test killed
# last time (tests added since cannot revive a killed one), plus any globs after it (for functions
# edited since, whose mutants mutmut makes anew); the score is read from the results mutmut keeps
# for the others.
# Environment: MUTATION_CHILDREN (parallel workers, default 2), MUTATION_MIN (the score to reach
# among non-equivalent mutants, default 90; below it the script exits 1), VENV (default .venv).
# mutmut's progress goes to mutants/mutmut-<engine>.log, one line in 250 also to the terminal.
set -euo pipefail

cd "$(dirname "$0")/.."
engine="${1:-guard}"
case "$engine" in
guard | firewall) ;;
*)
    echo "usage: scripts/mutation.sh [guard|firewall] [mutant-glob ...]" >&2
    exit 2
    ;;
esac
shift $(($# > 0 ? 1 : 0))
venv="${VENV:-.venv}"
if (($# == 0)); then
    set -- "${engine}.engine.*"
elif [[ $1 == survivors ]]; then
    mapfile -t names < <("$venv/bin/python" scripts/mutation_report.py "$engine" --survivors)
    if ((${#names[@]} == 0)); then
        echo "no surviving mutant of $engine to run again"
        exec "$venv/bin/python" scripts/mutation_report.py "$engine" --min "${MUTATION_MIN:-90}"
    fi
    shift
    set -- "${names[@]}" "$@"
fi

mkdir -p mutants
log="mutants/mutmut-${engine}.log"
start=$(date +%s)
# mutmut redraws one progress line with carriage returns; keep the log readable and the terminal
# quiet. mutmut exits 0 however many mutants survive, so its status only tells a crash.
set +e
"$venv/bin/mutmut" run --max-children "${MUTATION_CHILDREN:-2}" "$@" 2>&1 |
    tr '\r' '\n' |
    awk -v logfile="$log" '
        /^(⠋|⠙|⠹|⠸|⠼|⠴|⠦|⠧|⠇|⠏) / {
            if ($2 ~ /^[0-9]+\/[0-9]+$/) {
                split($2, n, "/")
                last = $0
                if (n[1] + 0 >= mark) { print; fflush(); mark = n[1] + 250 }
            }
            next
        }
        /^(🎉|🙁|🫥|⏰|🤔|🔇|🧙|💥|🛑|\?) / { print > logfile; next }
        NF { print; print > logfile; fflush() }
        END { if (last != "") print last }
    '
status=${PIPESTATUS[0]}
set -e
if ((status != 0)); then
    echo "mutmut failed with exit status $status (see $log)" >&2
    exit 2
fi
echo "mutation run took $(($(date +%s) - start)) s"

"$venv/bin/python" scripts/mutation_report.py "$engine" --min "${MUTATION_MIN:-90}"
