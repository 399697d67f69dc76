#!/usr/bin/env bash
# fuzz-check.sh - what "make fuzz-check" runs: build each libFuzzer harness,
# replay its seed corpus, then fuzz it for FUZZ_TIME seconds.
#
#   CLANG=clang FUZZ_FLAGS='-g -O1 -fsanitize=fuzzer,...' FUZZ_TIME=30 \
#   FUZZ_SRC_units='src/units.c' ... fuzz-check.sh OUTDIR SRCDIR NAME...
#
# NAME's harness is SRCDIR/tests/fuzz/fuzz-NAME.c, linked with the
# SRCDIR-relative files in $FUZZ_SRC_NAME; its seeds are
# SRCDIR/tests/fuzz/corpus/NAME/, its dictionary SRCDIR/tests/fuzz/NAME.dict
# if there is one. Everything written goes to OUTDIR: the binaries, NAME.log,
# the scratch corpus corpus-NAME/ (seeded from the source tree, which is
# never written, and kept between runs), and NAME-crash-* for a failure.
#
# One line per harness, then a summary. Exit status 1 if a harness did not
# build or crashed (an ASan/UBSan report, a failed check, a leak, a timeout
# or too much memory); 0 with "skipped" when clang cannot build a fuzzer.

set -u

if (($# < 3)); then
  echo "usage: fuzz-check.sh OUTDIR SRCDIR NAME..." >&2
  exit 2
fi
out=$1 srcdir=$2
shift 2
time=${FUZZ_TIME:-30}
flags=${FUZZ_FLAGS:--g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined}
export UBSAN_OPTIONS=print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}

mkdir -p "$out" || exit 1

# clang and libFuzzer: build a do-nothing fuzzer first.
skip() {
  echo "fuzz-check: skipped ($1)"
  exit 0
}
[[ -n ${CLANG:-} ]] || skip "no clang: configure found none; install it, or make fuzz-check CLANG=/path/to/clang"
command -v "$CLANG" >/dev/null 2>&1 || skip "CLANG=$CLANG not found"
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
  >"$out/probe.c"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined -o "$out/probe" "$out/probe.c" \
  >"$out/probe.log" 2>&1; then
  skip "$CLANG cannot build a libFuzzer binary (no libFuzzer or sanitizer runtime): see $out/probe.log"
fi

failed=0
for h in "$@"; do
  bin=$out/fuzz-$h log=$out/$h.log corpus=$out/corpus-$h
  seeds=$srcdir/tests/fuzz/corpus/$h dict=$srcdir/tests/fuzz/$h.dict
  var=FUZZ_SRC_$h
  srcs=()
  for f in ${!var:-}; do srcs+=("$srcdir/$f"); done
  rm -f "$out/$h"-crash-* "$out/$h"-leak-* "$out/$h"-timeout-* "$out/$h"-oom-*

  # shellcheck disable=SC2086 # flags are words
  if ! "$CLANG" $flags -o "$bin" "$srcdir/tests/fuzz/fuzz-$h.c" "${srcs[@]}" >"$log" 2>&1; then
    echo "fuzz-$h: FAILED to build:"
    sed 's/^/    /' "$log" | head -n 20
    failed=$((failed + 1))
    continue
  fi

  # 1. every seed once: a crash here is a regression, the seed names it
  shopt -s nullglob
  files=("$seeds"/*)
  shopt -u nullglob
  if ((${#files[@]} > 0)) && ! "$bin" "${files[@]}" >>"$log" 2>&1; then
    seed=$(sed -n 's/^Running: //p' "$log" | tail -n 1)
    echo "fuzz-$h: FAILED on seed ${seed:-?}: $(grep -m 1 -E '^(fuzz-|==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log")"
    echo "    reproduce: $bin $seed   (log: $log)"
    failed=$((failed + 1))
    continue
  fi

  # 2. fuzz a scratch copy of the corpus, bounded in time and memory
  mkdir -p "$corpus" && chmod u+w "$corpus" || exit 1
  ((${#files[@]} == 0)) || { cp -f "${files[@]}" "$corpus"/ && chmod u+w "$corpus"/*; } || exit 1
  opts=(-max_total_time="$time" -rss_limit_mb=2048 -max_len=4096 -timeout=10
    -artifact_prefix="$out/$h-" -print_final_stats=1)
  [[ -f $dict ]] && opts+=(-dict="$dict")
  "$bin" "${opts[@]}" "$corpus" >>"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 runs in \2 s/p' "$log" | tail -n 1)
  if ((rc == 0)); then
    n=$(find "$corpus" -type f | wc -l)
    echo "fuzz-$h: ok: ${#files[@]} seeds replayed, ${runs:-? runs}, corpus $n inputs"
  else
    # shellcheck disable=SC2012 # libFuzzer names artifacts by hash
    art=$(ls -t "$out/$h"-crash-* "$out/$h"-leak-* "$out/$h"-timeout-* "$out/$h"-oom-* 2>/dev/null | head -n 1)
    echo "fuzz-$h: FAILED (exit $rc): $(grep -m 1 -E '^(fuzz-|==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log")"
    echo "    reproduce: $bin ${art:-(no artifact)}   (log: $log)"
    failed=$((failed + 1))
  fi
done

if ((failed > 0)); then
  echo "fuzz-check: $failed of $# harnesses FAILED"
  exit 1
fi
echo "fuzz-check: $# harnesses passed (${time} s of fuzzing each)"
