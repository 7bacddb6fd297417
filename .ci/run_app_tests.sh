#!/usr/bin/env bash
# Runs each tests/app file in its own Python process (Qt and the store keep process-wide
# state), two at a time: most of a file's wall time is importing PySide6/torch and waiting on
# subprocess servers, so two overlap well on a 2-core machine. Each file's output is printed
# whole when it ends; the exit status is 1 if any file failed. Hypothesis's pytest plugin is
# left out: loading it imports all of Hypothesis (~1 s a process, 78 processes), and the few
# files with Hypothesis tests run them as well without it.
set -u
PY=${1:?usage: run_app_tests.sh PYTHON [JOBS]}
JOBS=${2:-2}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export QT_QPA_PLATFORM=offscreen
ls tests/app/test_*.py | xargs -P "$JOBS" -I{} sh -c '
  f="$1"; log="$2/$(basename "$f").log"
  if "$3" -m pytest -q -ra -p no:cacheprovider -p no:hypothesispytest "$f" >"$log" 2>&1; then s=ok; else s=FAILED; touch "$log.failed"; fi
  { echo "=== $f: $s"; cat "$log"; } 
' _ {} "$logs" "$PY"
if ls "$logs"/*.failed >/dev/null 2>&1; then
  echo "FAILED app test files:"; ls "$logs"/*.failed | sed "s#$logs/##; s#.log.failed##"
  exit 1
fi
