#!/usr/bin/env bats
# progress.bats - --progress (a live line redrawn on a terminal, at most twice
# a second, erased before the report or error line), --interval (plain lines,
# terminal or not), --size and a regular file on stdin (percentage, ETA), and
# their usage errors. Slow transfers come from pv -L; the terminal is a pty
# from script(1), whose output is the screen's bytes.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
}

# on_tty OUT COMMAND: run the shell COMMAND with a pty as stderr (script -qfec);
# the bytes it drew go to OUT, its exit status to TTY_RC.
on_tty() {
  TTY_RC=0
  timeout -k 5 30 script -qfec "$2" /dev/null </dev/null >"$1" 2>&1 || TTY_RC=$?
}

# live_lines FILE: the live progress lines drawn in FILE (each one that a \r
# starts), one per line, without the \r and the padding.
live_lines() {
  perl -0777 -ne 'while (/\r(fastcat: [0-9.]+ s: [^\r\n]*?) *(?=[\r\n]|\z)/g) { print "$1\n" }' "$1"
}

# bytes_of "1.20 MiB": the byte count that units_format_bytes printed (approximately).
bytes_of() {
  awk -v v="$1" 'BEGIN { split(v, a, " "); m = 1
    if (a[2] == "KiB") m = 1024; else if (a[2] == "MiB") m = 1048576; else if (a[2] == "GiB") m = 1073741824
    printf "%d\n", a[1] * m }'
}

# assert_cleared FILE NEXT: the last live line in FILE is blanked out (\r, spaces,
# \r) and the text NEXT (the report or error line) starts right after that.
assert_cleared() {
  perl -0777 -ne '
    my $last = -1; while (/\rfastcat: [0-9.]+ s: /g) { $last = $-[0] }
    exit 2 if $last < 0;
    my $rest = substr($_, $last + 1);
    $rest =~ /\A([^\r\n]*)\r( +)\r\Q'"$2"'\E/ or exit 1;
    exit(length($2) >= length($1) ? 0 : 1);' "$1" ||
    fail "the live line is not erased before '$2': $(cat -A "$1" | tail -c 600)"
}

@test "--progress on a terminal, regular-file stdin: \\r-redrawn lines with a rising %, at most 2 per second, erased before the report" {
  need pv
  need script
  local rc start ms n pcts stamps
  mkpayload "$T/payload" 3145728
  # the reader takes 1 MiB/s and the socket buffers are small: the send takes about 2.5 s
  bg_listen L /dev/null /dev/null 'listening on .*:([0-9]+)$' \
    bash -c '"$1" -v -l -I 8k 127.0.0.1 0 | pv -q -L 1m >"$2"' _ "$FASTCAT" "$T/L.out"
  start=$(now_us)
  on_tty "$T/tty" "$(printf '%q ' "$FASTCAT" --progress --report -O 8k 127.0.0.1 "$L_PORT") <$(printf '%q' "$T/payload") >/dev/null"
  ms=$(elapsed_ms "$start")
  assert_equal "fastcat on a tty: exit $TTY_RC" "fastcat on a tty: exit 0"
  wait_exit rc "$L_PID" 20
  assert_same_bytes "$T/payload" "$T/L.out"
  live_lines "$T/tty" >"$T/live"
  n=$(wc -l <"$T/live")
  echo "# $n redraws in $ms ms:" >&3
  sed 's/^/#   /' "$T/live" >&3
  ((n >= 2)) || fail "$n live lines in $ms ms: $(cat -A "$T/tty" | head -c 600)"
  # at most one redraw per 0.5 s (the first comes 0.5 s in)
  ((n <= ms / 500)) || fail "$n redraws in $ms ms: more than 2 per second"
  stamps=$(sed -E 's/^fastcat: ([0-9.]+) s: .*/\1/' "$T/live")
  awk 'NR > 1 && $1 - prev < 0.45 { bad = 1 } { prev = $1 } END { exit bad }' <<<"$stamps" ||
    fail "redraws less than 0.5 s apart: $stamps"
  # a percentage on every line, rising, from the file's size; an ETA while it runs
  grep -Evq '; [0-9]+%' "$T/live" && fail "a live line without a percentage: $(cat "$T/live")"
  pcts=$(sed -E 's/.*; ([0-9]+)%.*/\1/' "$T/live")
  awk 'NR > 1 && $1 < prev { bad = 1 } $1 > 100 { bad = 1 } { prev = $1 } END { exit bad }' <<<"$pcts" ||
    fail "percentages not rising within 0-100: $pcts"
  (( $(head -n 1 <<<"$pcts") < 100 )) || fail "the first redraw already says 100%: $pcts"
  grep -q ', ETA [0-9.]\+ s$' "$T/live" || fail "no ETA: $(cat "$T/live")"
  assert_cleared "$T/tty" 'fastcat: sent 3145728 bytes'
}

@test "--progress --size on a terminal with a pipe on stdin: a percentage; without --size none" {
  need pv
  need script
  local rc
  mkpayload "$T/payload" 2000000
  fc_listen L
  on_tty "$T/tty" "pv -q -L 2m $(printf '%q' "$T/payload") | $(printf '%q ' "$FASTCAT" --progress --size 2000000 127.0.0.1 "$L_PORT") >/dev/null"
  assert_equal "with --size: exit $TTY_RC" "with --size: exit 0"
  wait_exit rc "$L_PID" 20
  assert_same_bytes "$T/payload" "$T/L.out"
  live_lines "$T/tty" >"$T/live"
  [[ -s $T/live ]] || fail "no live line: $(cat -A "$T/tty")"
  grep -Evq '^fastcat: [0-9.]+ s: sent [0-9.]+ [KMG]?i?B \([0-9.]+ [KMG]?i?B/s\), received 0 B; [0-9]+%' "$T/live" &&
    fail "a line without its percentage: $(cat "$T/live")"
  # the line is erased at the end, and nothing else was printed
  perl -0777 -ne 'exit(/\r +\r\z/ ? 0 : 1)' "$T/tty" || fail "not erased at exit: $(cat -A "$T/tty" | tail -c 300)"

  fc_listen L2
  on_tty "$T/tty2" "pv -q -L 2m $(printf '%q' "$T/payload") | $(printf '%q ' "$FASTCAT" --progress 127.0.0.1 "$L2_PORT") >/dev/null"
  assert_equal "without --size: exit $TTY_RC" "without --size: exit 0"
  live_lines "$T/tty2" >"$T/live2"
  [[ -s $T/live2 ]] || fail "no live line: $(cat -A "$T/tty2")"
  grep -q '%' "$T/live2" && fail "a percentage with no size known: $(cat "$T/live2")"
  wait_exit rc "$L2_PID" 20
}

@test "--progress on a terminal: the live line is erased before the error line (SIGTERM)" {
  need pv
  need script
  mkpayload "$T/payload" 1000000
  fc_listen L
  # fastcat gets SIGTERM 1.5 s into a 5 s transfer, after two redraws
  on_tty "$T/tty" "pv -q -L 200k $(printf '%q' "$T/payload") | timeout --foreground -s TERM 1.5 $(printf '%q ' "$FASTCAT" --progress 127.0.0.1 "$L_PORT") >/dev/null"
  assert_equal "exit $TTY_RC" "exit 124"
  assert_cleared "$T/tty" 'fastcat: interrupted by SIGTERM'
}

@test "--interval 0.2 with stderr not a terminal: plain lines, bytes rising" {
  need pv
  local rc n counts
  mkpayload "$T/payload" 2500000
  fc_listen L
  run -0 --separate-stderr io /dev/null "$T/c.out" bash -c \
    'pv -q -L 2m "$1" | "$2" --interval 0.2 127.0.0.1 "$3"' _ "$T/payload" "$FASTCAT" "$L_PORT"
  wait_exit rc "$L_PID" 20
  assert_same_bytes "$T/payload" "$T/L.out"
  printf '%s\n' "$stderr" >"$T/c.err"
  echo "# stderr:" >&3
  sed 's/^/#   /' "$T/c.err" >&3
  [[ $stderr != *$'\r'* ]] || fail "a \\r on a plain stderr: $(cat -A "$T/c.err")"
  # every line is a progress line: the size is unknown (a pipe), so no percentage
  grep -Evq '^fastcat: [0-9.]+ s: sent [0-9.]+ [KMG]?i?B( \([0-9.]+ [KMG]?i?B/s\))?, received 0 B$' "$T/c.err" &&
    fail "an unexpected line: $stderr"
  n=$(wc -l <"$T/c.err")
  ((n >= 3)) || fail "$n lines, expected at least 3: $stderr"
  counts=$(while read -r _ _ _ _ num unit _; do bytes_of "$num ${unit%,}"; done <"$T/c.err")
  # the first three while pv feeds: strictly rising; after that never falling
  awk 'NR > 1 && $1 < prev { bad = 1 } NR > 1 && NR <= 3 && $1 <= prev { bad = 1 } { prev = $1 } END { exit bad }' <<<"$counts" ||
    fail "byte counts not rising: $counts"
}

@test "--progress with stderr not a terminal: no live line, nothing at all" {
  need pv
  local rc
  mkpayload "$T/payload" 2000000
  fc_listen L
  run -0 --separate-stderr io /dev/null "$T/c.out" bash -c \
    'pv -q -L 2m "$1" | "$2" --progress --size 2M 127.0.0.1 "$3"' _ "$T/payload" "$FASTCAT" "$L_PORT"
  assert_equal "stderr: '$stderr'" "stderr: ''"
  wait_exit rc "$L_PID" 20
  assert_same_bytes "$T/payload" "$T/L.out"
}

@test "usage errors: bad --size and --interval values, --size alone, with --bench" {
  usage_exact "fastcat: --size 0: size must be at least 1 byte" --progress --size 0 127.0.0.1 1
  usage_exact "fastcat: --size 5q: invalid size (digits with an optional k/K/KiB, m/M/MiB or g/G/GiB suffix)" \
    --progress --size 5q 127.0.0.1 1
  usage_exact "fastcat: --size -1: invalid size (digits with an optional k/K/KiB, m/M/MiB or g/G/GiB suffix)" \
    --interval 1 --size -1 127.0.0.1 1
  usage_exact "fastcat: --size 99999999999999999999: size too large" --progress --size 99999999999999999999 127.0.0.1 1
  usage_exact "fastcat: --size: needs --progress or --interval" --size 1M 127.0.0.1 1
  usage_exact "fastcat: --interval 0: must be greater than 0" --interval 0 127.0.0.1 1
  usage_exact "fastcat: --interval 0ms: must be greater than 0" --interval 0ms 127.0.0.1 1
  usage_exact "fastcat: --interval -1: invalid time (seconds, e.g. 5, 0.5 or 500ms)" --interval -1 127.0.0.1 1
  usage_exact "fastcat: --interval abc: invalid time (seconds, e.g. 5, 0.5 or 500ms)" --interval abc 127.0.0.1 1
  usage_exact "fastcat: --interval 9999999999: time too large" --interval 9999999999 127.0.0.1 1
  usage_exact "fastcat: --interval: option requires an argument" 127.0.0.1 1 --interval
  usage_exact "fastcat: --bench and --progress: cannot be combined" --bench --progress
  usage_exact "fastcat: --bench and --interval: cannot be combined" --bench --interval 1
  usage_exact "fastcat: --bench and --size: cannot be combined" --bench --size 1M
}
