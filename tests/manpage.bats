#!/usr/bin/env bats
# manpage.bats - doc/fastcat.1: mandoc finds nothing to warn about, every long
# option of "fastcat --help-all" has an entry of its own, and the sections the
# page promises are there, in order.

load helpers

MANPAGE=$BATS_TEST_DIRNAME/../doc/fastcat.1

@test "man page: mandoc -Tlint -Wwarning reports nothing" {
  command -v mandoc >/dev/null 2>&1 ||
    skip "mandoc is not installed (e.g. apt-get install mandoc)"
  run mandoc -Tlint -Wwarning "$MANPAGE"
  assert_output ''
  assert_success
}

@test "man page: every long option of --help-all has an .It Fl entry" {
  local -a opts
  mapfile -t opts < <("$FASTCAT" --help-all | grep -oE -- '--[a-z][a-z0-9-]*' |
    sed 's/^--//' | LC_ALL=C sort -u)
  # not vacuous: --help-all lists some thirty-five long options
  ((${#opts[@]} >= 30)) || fail "only ${#opts[@]} long options in --help-all"
  local items o missing=
  items=$(grep -E '^\.It .*Fl ' "$MANPAGE")
  for o in "${opts[@]}"; do
    grep -Eq -- "Fl \\\\-$o([^a-z0-9-]|\$)" <<<"$items" || missing+=" --$o"
  done
  [[ -z $missing ]] || fail "long options with no .It entry in fastcat.1:$missing"
}

@test "man page: the sections, in order" {
  local want='NAME SYNOPSIS DESCRIPTION TRANSPORTS CHUNK-AND-BUFFER-SIZES ZERO-COPY
DATAGRAMS THROUGHPUT-REPORT EXIT-STATUS EXAMPLES SEE-ALSO CAVEATS' have s next=0
  local -a order
  read -ra order <<<"${want//$'\n'/ }"
  have=$(sed -n 's/^\.Sh //p' "$MANPAGE" | tr ' ' '-')
  for s in $have; do
    [[ $s == "${order[next]:-}" ]] && next=$((next + 1))
  done
  ((next == ${#order[@]})) ||
    fail "section ${order[next]} missing or out of order; the page has: $(echo $have)"
}

@test "man page: EXAMPLES and SEE ALSO name what they should" {
  local ex see
  ex=$(sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$MANPAGE")
  see=$(sed -n '/^\.Sh SEE ALSO/,/^\.Sh /p' "$MANPAGE")
  # a command is a line "$ ..." of a display, or of a .Dl line
  grep -Eq '^(\.Dl )?\$ dd .*\| fastcat' <<<"$ex" || fail "no dd | fastcat example"
  grep -Eq '^(\.Dl )?\$ tar .*\| fastcat' <<<"$ex" || fail "no tar | fastcat example"
  grep -Eq '^(\.Dl )?\$ fastcat -l .*> ' <<<"$ex" || fail "no example receiving to a file"
  grep -Eq '^(\.Dl )?\$ (time )?nc ' <<<"$ex" || fail "no comparison with nc"
  local x
  for x in 'nc 1' 'socat 1' 'pv 1' 'iperf3 1'; do
    grep -q "^\.Xr $x" <<<"$see" || fail "SEE ALSO lacks $x"
  done
}
