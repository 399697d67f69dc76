#!/usr/bin/env bats
# doc/HACKING.md stays true: its map names every file in src/, and its exit
# statuses are the ones src/base/base.h defines.

load helpers

SRC_DIR="$BATS_TEST_DIRNAME/../src"
HACKING="$BATS_TEST_DIRNAME/../doc/HACKING.md"

@test "HACKING.md's map of src/ names every source file and header" {
  local f missing=()
  for f in "$SRC_DIR"/*.[ch] "$SRC_DIR"/*/*.[ch]; do
    f=${f#"$SRC_DIR"/}
    [[ $f == config.h ]] && continue
    grep -q "^| \`$f\`\| \`$f\` |\|/ \`$f\` |" "$HACKING" || missing+=("$f")
  done
  ((${#missing[@]} == 0)) || fail "not in HACKING.md's map: ${missing[*]}"
}

@test "HACKING.md's exit statuses are the ones base/base.h defines" {
  local name value n=0
  while read -r name value; do
    grep -q "\`$name\` $value\b" "$HACKING" || fail "HACKING.md does not say $name $value"
    n=$((n + 1))
  done < <(sed -n 's/^#define \(EXIT_[A-Z_]*\) *\([0-9]\+\).*/\1 \2/p' "$SRC_DIR/base/base.h")
  ((n >= 9)) || fail "found only $n exit statuses in base/base.h"
}
