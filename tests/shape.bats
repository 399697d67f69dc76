#!/usr/bin/env bats
# The code's shape (doc/HACKING.md, "Layers"): folders small enough to read in one sitting,
# files of one job, short functions, and platform choices made by configure, not #if.

load helpers

SRC="$BATS_TEST_DIRNAME/../src"

@test "no folder of src/ holds more than 15 files" {
  local d n big=()
  for d in "$SRC"/*/; do
    n=$(find "$d" -maxdepth 1 -name '*.[ch]' | wc -l)
    ((n <= 15)) || big+=("${d%/} ($n)")
  done
  ((${#big[@]} == 0)) || fail "folders over 15 files: ${big[*]}"
}

@test "no .c file of src/ is over 500 lines" {
  local f long=()
  for f in "$SRC"/*/*.c; do
    (($(wc -l <"$f") <= 500)) || long+=("${f#"$SRC"/} ($(wc -l <"$f"))")
  done
  ((${#long[@]} == 0)) || fail "over 500 lines: ${long[*]}"
}

@test "no function of src/ is over 60 lines, braces included" {
  # functions open and close with a brace in column 0 (.clang-format: BreakBeforeBraces Linux)
  run awk '/^\{/ { start = FNR }
    /^\}/ && start { if (FNR - start + 1 > 60) print FILENAME ":" start ": " FNR - start + 1 " lines"; start = 0 }' \
    "$SRC"/*/*.c
  assert_output ""
  # the measure sees functions: a file of them has its longest above 20 lines
  run awk '/^\{/ { start = FNR } /^\}/ && start { if (FNR - start + 1 > max) max = FNR - start + 1; start = 0 }
    END { print max }' "$SRC/relay/flow-pump.c"
  ((output > 20)) || fail "the longest function of relay/flow-pump.c measured $output lines"
}

@test "no #if in a .c file of src/: configure picks platform files, headers hold the rest" {
  run grep -n '^[[:space:]]*#[[:space:]]*if' "$SRC"/*/*.c
  assert_failure 1
}
