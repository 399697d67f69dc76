#!/usr/bin/env bats
# usage.bats - command-line validation: every usage error exits 2 with its
# one-line message on stderr and nothing on stdout; valid spellings are
# accepted (they get as far as connecting to a closed port: exit 1);
# --help (one screen), --help-all (every option of the getopt table) and
# --version.

load helpers

setup_file() {
  closed_port 127.0.0.1
  export CLOSED_PORT
}

INVALID_SIZE='invalid size (digits with an optional k/K/KiB, m/M/MiB or g/G/GiB suffix)'
INVALID_TIME='invalid time (seconds, e.g. 5, 0.5 or 500ms)'

# accepted args...: options are valid; fastcat tries to connect to the
# closed port and fails at run time (exit 3, Connection refused).
accepted() {
  run -3 --separate-stderr timeout 10 "$FASTCAT" "$@" 127.0.0.1 "$CLOSED_PORT" </dev/null
  grep -Fxq "fastcat: connect 127.0.0.1:$CLOSED_PORT: Connection refused" <<<"$stderr" ||
    fail "args [$*]: expected 'Connection refused', got: $stderr"
}

@test "--help and -h: usage on stdout, exit 0, nothing on stderr" {
  local o
  for o in --help -h; do
    run -0 --separate-stderr "$FASTCAT" "$o"
    assert_equal "stderr: '$stderr'" "stderr: ''"
    assert_output --partial 'fastcat'
    assert_output --partial '-l'
    assert_output --partial '--chunk-size'
  done
}

# The long options of the option table in src/cli/options-table.c (getopt's comes
# from it), one a line, without "--".
table_long_options() {
  sed -n 's/.*\.name = "\([a-z][a-z0-9-]*\)".*/\1/p' \
    "$BATS_TEST_DIRNAME/../src/cli/options-table.c" | LC_ALL=C sort -u
}

@test "--help fits one 80x24 screen: at most 24 lines of at most 79 columns" {
  run -0 --separate-stderr "$FASTCAT" --help
  assert_equal "stderr: '$stderr'" "stderr: ''"
  ((${#lines[@]} <= 24)) || fail "--help has ${#lines[@]} lines (at most 24)"
  local l long=
  for l in "${lines[@]}"; do
    ((${#l} <= 79)) || long+=$'\n'"${#l}: $l"
  done
  [[ -z $long ]] || fail "--help lines over 79 columns:$long"
  # the way to everything else is the last line
  assert_line --index $((${#lines[@]} - 1)) --partial 'fastcat --help-all'
  assert_line --index $((${#lines[@]} - 1)) --partial 'man fastcat'
}

@test "--help's first screen shows the way to a far machine (--image at both ends; -P, --resume, --retry) and what -I turns off" {
  run -0 --separate-stderr "$FASTCAT" --help
  assert_output --partial 'fastcat -l --image 9000 >> disk.img'
  assert_output --partial 'fastcat --image receiver 9000 < disk.img'
  assert_output --partial '-P N|auto'
  assert_output --partial '--retry N'
  assert_output --partial "-I turns TCP's receive autotuning off"
}

@test "--help keeps the exit statuses, 0 to 8" {
  run -0 --separate-stderr "$FASTCAT" --help
  assert_output --partial 'Exit status:'
  local n
  for n in 0 1 2 3 4 5 6 7 8; do
    grep -Eq "(^|[ :,])$n [a-z-]" <<<"$output" || fail "--help does not explain exit status $n"
  done
}

@test "--help-all: exit 0, nothing on stderr, every long option of the getopt table" {
  run -0 --separate-stderr "$FASTCAT" --help-all
  assert_equal "stderr: '$stderr'" "stderr: ''"
  local -a opts
  mapfile -t opts < <(table_long_options)
  # not vacuous: the table has some thirty-five long options
  ((${#opts[@]} >= 30)) || fail "only ${#opts[@]} long options found in src/cli/options-table.c"
  local o missing=
  for o in "${opts[@]}"; do
    grep -Eq -- "--$o([^a-z0-9-]|$)" <<<"$output" || missing+=" --$o"
  done
  [[ -z $missing ]] || fail "long options --help-all does not list:$missing"
}

@test "-V and --version print 'fastcat 0.1.0', exit 0" {
  run -0 --separate-stderr "$FASTCAT" -V
  assert_output 'fastcat 0.1.0'
  run -0 --separate-stderr "$FASTCAT" --version
  assert_output 'fastcat 0.1.0'
}

@test "chunk size out of range: -B 0, 65M, 67108865 (64 MiB + 1)" {
  local v
  for v in 0 65M 67108865 1G; do
    usage_err "fastcat: -B $v: chunk size must be 1 byte to 64 MiB" -B "$v" 127.0.0.1 1
  done
}

@test "invalid sizes: 1e3, -1, abc, empty, ' 5', 4kb, 0x10, 1.5k, +5, '5 '" {
  local v
  for v in 1e3 -1 abc ' 5' 4kb 0x10 1.5k +5 '5 ' 4kk 4MB; do
    usage_err "fastcat: -B $v: $INVALID_SIZE" -B "$v" 127.0.0.1 1
  done
  usage_prefix "fastcat: -B " -B '' 127.0.0.1 1
  grep -Fq "$INVALID_SIZE" <<<"$stderr" || fail "empty -B: $stderr"
}

@test "sizes that overflow: size too large (no silent wrap-around)" {
  local v
  # 18014398509481988k = 2^54+4 KiB wraps to exactly 4096 in 64 bits
  for v in 99999999999999999999 18446744073709551616 18014398509481988k 17179869184G; do
    usage_err "fastcat: -B $v: size too large" -B "$v" 127.0.0.1 1
  done
}

@test "--read-size / --write-size out of range" {
  usage_prefix "fastcat: --read-size 0: " --read-size 0 127.0.0.1 1
  usage_prefix "fastcat: --write-size 0: " --write-size 0 127.0.0.1 1
  usage_prefix "fastcat: --read-size 65M: " --read-size 65M 127.0.0.1 1
  usage_prefix "fastcat: --write-size abc: " --write-size abc 127.0.0.1 1
}

@test "--sndbuf / --rcvbuf out of range: 0, 1025M, 2G" {
  local v o
  for o in --sndbuf --rcvbuf; do
    for v in 0 1025M 2G; do
      usage_err "fastcat: $o $v: socket buffer size must be 1 byte to 1 GiB" "$o" "$v" 127.0.0.1 1
    done
  done
  usage_err "fastcat: --sndbuf 4kb: $INVALID_SIZE" --sndbuf 4kb 127.0.0.1 1
}

@test "valid sizes are accepted: -B 1, 64MiB, 64M, 4KiB; --sndbuf 1G; --read-size 1k" {
  accepted -B 1
  accepted -B 64MiB
  accepted -B 64M
  accepted -B 67108864
  accepted -B 4KiB
  accepted --chunk-size 7
  accepted --read-size 1k --write-size 2K
  accepted --sndbuf 1G --rcvbuf 1GiB
}

@test "connect ports: 99999, 65536, 0 out of range; http, -1, +80, 80x not numbers" {
  usage_err "fastcat: port 99999: must be 1 to 65535" 127.0.0.1 99999
  usage_err "fastcat: port 65536: must be 1 to 65535" 127.0.0.1 65536
  usage_err "fastcat: port 0: must be 1 to 65535" 127.0.0.1 0
  usage_err "fastcat: port http: not a number" 127.0.0.1 http
  usage_err "fastcat: port -1: not a number" -- 127.0.0.1 -1
  usage_err "fastcat: port +80: not a number" 127.0.0.1 +80
  usage_err "fastcat: port 80x: not a number" 127.0.0.1 80x
  usage_err "fastcat: port 18446744073709551617: must be 1 to 65535" 127.0.0.1 18446744073709551617
}

@test "listen ports: 99999 and 65536 out of range (0 to 65535), http not a number" {
  usage_err "fastcat: port 99999: must be 0 to 65535" -l 127.0.0.1 99999
  usage_err "fastcat: port 65536: must be 0 to 65535" -l 65536
  usage_err "fastcat: port http: not a number" -l 127.0.0.1 http
}

@test "times: -w abc/-1/1x/empty invalid, -w 0 and 0ms not > 0, -q -1 invalid" {
  local v
  for v in abc -1 1x 1.2.3 5min; do
    usage_err "fastcat: -w $v: $INVALID_TIME" -w "$v" 127.0.0.1 1
  done
  usage_prefix "fastcat: -w " -w '' 127.0.0.1 1
  usage_err "fastcat: -w 0: timeout must be greater than 0" -w 0 127.0.0.1 1
  usage_err "fastcat: -w 0ms: timeout must be greater than 0" -w 0ms 127.0.0.1 1
  usage_err "fastcat: -w 0.0: timeout must be greater than 0" -w 0.0 127.0.0.1 1
  usage_prefix "fastcat: -q -1: invalid time (" -q -1 127.0.0.1 1
  usage_prefix "fastcat: -q x: invalid time (" -q x 127.0.0.1 1
}

@test "valid times are accepted: -w 5, 0.5, 500ms, 2s; -q 0, -q 1.5" {
  accepted -w 5
  accepted -w 0.5
  accepted -w 500ms
  accepted -w 2s
  accepted --timeout 1
  accepted -q 0
  accepted -q 1.5
}

@test "unknown options and missing option arguments" {
  usage_err "fastcat: --frobnicate: unknown option (or an ambiguous abbreviation)" --frobnicate 127.0.0.1 1
  usage_err "fastcat: -Z: unknown option" -Z 127.0.0.1 1
  usage_err "fastcat: -B: option requires an argument" 127.0.0.1 1 -B
  usage_err "fastcat: -B: option requires an argument" -B
}

@test "missing or extra operands" {
  usage_err "fastcat: missing host and port"
  usage_err "fastcat: missing port" 127.0.0.1
  usage_err "fastcat: -l: missing port" -l
  usage_err "fastcat: unexpected argument 'x'" 127.0.0.1 1 x
  usage_err "fastcat: unexpected argument 'x'" -l 127.0.0.1 1 x
}

@test "conflicting options: -k without -l, -4 with -6, -d with --send-only, --report=xml" {
  usage_err "fastcat: -k: needs -l" -k 127.0.0.1 1
  usage_err "fastcat: -4 and -6: pick one" -4 -6 127.0.0.1 1
  usage_err "fastcat: -4 and -6: pick one" -l -6 -4 1
  usage_err "fastcat: -d (--recv-only) and --send-only: nothing would move" -d --send-only 127.0.0.1 1
  usage_err "fastcat: -d (--recv-only) and --send-only: nothing would move" --recv-only --send-only 127.0.0.1 1
  usage_err "fastcat: --report=xml: must be human or json" --report=xml 127.0.0.1 1
}

@test "valid flags are accepted: -N, -n, -4, --report=json, --no-exit-on-peer-eof, -k with -l" {
  accepted -N
  accepted -n
  accepted -4
  accepted --report=json
  accepted --report=human
  accepted --exit-on-peer-eof
  accepted --no-exit-on-peer-eof
  accepted -d
  accepted --send-only
  # -k -l is valid: it listens (checked by the listening line, then killed)
  fc_listen K -k -d
  kill "$K_PID"
}
