#!/usr/bin/env bash
# run-tests.sh - run fastcat's whole test suite and print one summary line.
#
#   FASTCAT=/abs/path/to/fastcat [UNIT_DIR=dir] tests/run-tests.sh
#
# 1. every executable in $UNIT_DIR (optional; each prints TAP lines
#    "ok N - ..." / "not ok N - ...");
# 2. bats --tap on every tests/*.bats (tests/ = this script's directory).
# TAP lines are shown as they come and kept in $TAP_LOG (default
# tests/test-results.tap, or a temp file if tests/ is not writable).
# The last line is "N passed, N failed, N skipped" (skips are not passes).
# Exit status: 0 only if nothing failed, bats itself succeeded and at least
# one test ran.
#
# Environment: FASTCAT (required), UNIT_DIR, TAP_LOG, BATS_TEST_TIMEOUT
# (default 120 s per test), BATS_LIB_PATH (default /usr/lib/bats),
# BATS_JOBS (default 1; >1 needs GNU parallel), TESTS_SKIP (names of .bats
# files this pass leaves out, e.g. "docs.bats usage.bats": a second build
# need not rerun tests that cannot reach the code it changes; said in a line).

set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ -z ${FASTCAT:-} ]]; then
  echo "run-tests.sh: set FASTCAT to the absolute path of the fastcat binary" >&2
  exit 2
fi
case $FASTCAT in
  /*) ;;
  *) FASTCAT=$(cd "$(dirname "$FASTCAT")" && pwd)/$(basename "$FASTCAT") ;;
esac
if [[ ! -f $FASTCAT || ! -x $FASTCAT ]]; then
  echo "run-tests.sh: FASTCAT=$FASTCAT is not an executable file" >&2
  exit 2
fi
export FASTCAT
export BATS_LIB_PATH=${BATS_LIB_PATH:-/usr/lib/bats}
export BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

if ! command -v bats >/dev/null 2>&1; then
  echo "run-tests.sh: bats not found" >&2
  exit 2
fi

if [[ -n ${TAP_LOG:-} ]]; then
  log=$TAP_LOG
elif [[ -w $here ]]; then
  log=$here/test-results.tap
else
  log=$(mktemp "${TMPDIR:-/tmp}/fastcat-tests.XXXXXX.tap")
fi
: >"$log" || { echo "run-tests.sh: cannot write $log" >&2; exit 2; }

status=0

# ---- 1. unit tests (TAP executables)
if [[ -n ${UNIT_DIR:-} ]]; then
  if [[ -d $UNIT_DIR ]]; then
    shopt -s nullglob
    for t in "$UNIT_DIR"/*; do
      [[ -f $t && -x $t ]] || continue
      name=${t##*/}
      echo "# unit: $name" | tee -a "$log"
      seg=$(mktemp)
      timeout -k 10 "${UNIT_TIMEOUT:-300}" "$t" 2>&1 | tee "$seg" | tee -a "$log"
      rc=${PIPESTATUS[0]}
      if ((rc != 0)); then
        status=1
        # a crash or non-zero exit without any "not ok" line still counts
        if ! grep -q '^not ok' "$seg"; then
          echo "not ok - unit/$name exited with status $rc" | tee -a "$log"
        fi
      fi
      rm -f "$seg"
    done
    shopt -u nullglob
  else
    echo "# UNIT_DIR=$UNIT_DIR does not exist; no unit tests run" | tee -a "$log"
  fi
fi

# ---- 2. bats suites
shopt -s nullglob
bats_files=()
left_out=()
for f in "$here"/*.bats; do
  if [[ " ${TESTS_SKIP:-} " == *" ${f##*/} "* ]]; then left_out+=("${f##*/}"); else bats_files+=("$f"); fi
done
shopt -u nullglob
if ((${#left_out[@]})); then
  echo "# not run in this pass (TESTS_SKIP): ${left_out[*]}" | tee -a "$log"
fi
if ((${#bats_files[@]} == 0)); then
  echo "# no .bats files in $here" | tee -a "$log"
  status=1
else
  jobs=()
  if [[ ${BATS_JOBS:-1} != 1 ]]; then jobs=(--jobs "$BATS_JOBS"); fi
  bats_seg=$(mktemp)
  bats --tap --timing --print-output-on-failure "${jobs[@]}" "${bats_files[@]}" 2>&1 |
    tee "$bats_seg" | tee -a "$log"
  brc=${PIPESTATUS[0]}
  if ((brc != 0)); then
    status=1
  fi
  # bats stopped early (crash, signal): fewer results than planned
  planned=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$bats_seg" | head -n 1)
  reported=$(grep -cE '^(not )?ok [0-9]+' "$bats_seg")
  if [[ -z $planned ]] || ((reported != planned)); then
    echo "# bats planned ${planned:-?} tests but reported $reported" | tee -a "$log"
    status=1
  fi
  rm -f "$bats_seg"
fi

# ---- summary
ok=$(grep -cE '^ok( |$)' "$log")
skipped=$(grep -ciE '^ok( |$).*# skip' "$log")
failed=$(grep -cE '^not ok( |$)' "$log")
passed=$((ok - skipped))
if ((failed > 0)) || ((ok + failed == 0)); then
  status=1
fi
echo "# TAP log: $log"
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
