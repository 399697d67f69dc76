#!/usr/bin/env bats
# transport-usage.bats - command-line validation of the transport options
# (--transport, -u, -U, --dgram-size, --no-dgram-eof, Unix socket operands):
# usage errors exit 2 with their one-line message and nothing on stdout;
# valid spellings get as far as a run-time error (exit 1).

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
}

DGRAM_NEEDS='needs a datagram transport (udp, unix-dgram, unix-seqpacket)'
UDP_MAX='a UDP datagram holds at most 65527 bytes (65507 over IPv4)'
INVALID_SIZE='invalid size (digits with an optional k/K/KiB, m/M/MiB or g/G/GiB suffix)'

# no_such_path fastcat-args... (the last one a missing PATH): options are
# valid, fastcat fails at run time: exit 1, 'connect PATH: No such file or directory'.
no_such_path() {
  local p=${*: -1}
  run -3 --separate-stderr timeout 10 "$FASTCAT" "$@" </dev/null
  grep -Fxq "fastcat: connect $p: No such file or directory" <<<"$stderr" ||
    fail "args [$*]: expected 'connect $p: No such file or directory', got: $stderr"
}

@test "--help-all mentions --transport, --dgram-size and --no-dgram-eof" {
  run -0 --separate-stderr "$FASTCAT" --help-all
  assert_output --partial '--transport'
  assert_output --partial '--dgram-size'
  assert_output --partial '--no-dgram-eof'
  assert_output --partial '-U'
}

@test "--transport foo / TCP / dgram: unknown transport, exit 2" {
  local v
  for v in foo TCP unix-stream dgram; do
    usage_err "fastcat: --transport $v: unknown transport (tcp, udp, unix, unix-dgram, unix-seqpacket)" \
      --transport "$v" 127.0.0.1 1
  done
}

@test "--transport without an argument: 'option requires an argument', exit 2" {
  usage_err "fastcat: --transport: option requires an argument" --transport
}

@test "-u --transport unix: 'pick one', exit 2 (either order)" {
  usage_err "fastcat: -u and --transport unix: pick one" -u --transport unix "$T/x.sock"
  usage_err "fastcat: -u and --transport unix: pick one" --transport unix -u "$T/x.sock"
}

@test "Unix socket operands: missing path, two operands, a port after the path" {
  usage_err "fastcat: missing socket path" -U
  usage_err "fastcat: missing socket path" -lU
  usage_err "fastcat: missing socket path" -Uu
  usage_err "fastcat: missing socket path" --transport unix-seqpacket
  usage_err "fastcat: missing socket path" -l --transport unix-dgram
  usage_err "fastcat: unexpected argument 'x'" -U "$T/a.sock" x
  usage_err "fastcat: unexpected argument '0'" -lU "$T/a.sock" 0
  usage_err "fastcat: unexpected argument 'y'" -Uu @name y
}

@test "too-long Unix path is a usage error before any socket: exit 2" {
  local p
  p=$(path_of_len 200 "$T")
  usage_err "fastcat: $p: Unix socket path too long (200 bytes, at most 107)" -U "$p"
  usage_err "fastcat: $p: Unix socket path too long (200 bytes, at most 107)" -l --transport unix-seqpacket "$p"
}

@test "--dgram-size with tcp or unix stream: 'needs a datagram transport', exit 2" {
  usage_err "fastcat: --dgram-size: $DGRAM_NEEDS" --dgram-size 1024 127.0.0.1 1
  usage_err "fastcat: --dgram-size: $DGRAM_NEEDS" --transport tcp --dgram-size 1024 127.0.0.1 1
  usage_err "fastcat: --dgram-size: $DGRAM_NEEDS" -U --dgram-size 1024 "$T/x.sock"
  usage_err "fastcat: --dgram-size: $DGRAM_NEEDS" --transport unix --dgram-size 1k "$T/x.sock"
}

@test "--dgram-size out of range or invalid: exit 2 (udp and unix-dgram)" {
  local v
  for v in 0 65M 67108865; do
    usage_err "fastcat: --dgram-size $v: datagram size must be 1 byte to 64 MiB" -Uu --dgram-size "$v" "$T/x.sock"
  done
  usage_err "fastcat: --dgram-size 0: datagram size must be 1 byte to 64 MiB" -u --dgram-size 0 127.0.0.1 1
  for v in 1e3 -1 abc 4kb; do
    usage_err "fastcat: --dgram-size $v: $INVALID_SIZE" -u --dgram-size "$v" 127.0.0.1 1
  done
  usage_err "fastcat: --dgram-size: option requires an argument" -u --dgram-size
}

@test "UDP datagram limit: -B / --dgram-size above 65527 with udp, exit 2; 65527 itself is accepted" {
  usage_err "fastcat: -B 1M: $UDP_MAX" -u -B 1M 127.0.0.1 1
  usage_err "fastcat: -B 65528: $UDP_MAX" --transport udp -B 65528 127.0.0.1 1
  usage_err "fastcat: --dgram-size 64K: $UDP_MAX" -u --dgram-size 64K 127.0.0.1 1
  # 65527 is a valid option value (an empty stdin: only the EOF datagram is sent)
  fc_listen L -u
  run -0 --separate-stderr timeout 10 "$FASTCAT" -u -B 65527 127.0.0.1 "$L_PORT" </dev/null
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 0"
  # -B 1M is fine for unix-dgram (no UDP limit): runtime error only
  no_such_path -Uu -B 1M "$T/nope.sock"
}

@test "valid spellings: -U, -Uu, -U -u, --transport unix-dgram, -U --transport unix-seqpacket reach connect()" {
  local p=$T/nope.sock
  no_such_path -U "$p"
  no_such_path --transport unix "$p"
  no_such_path -Uu "$p"
  no_such_path -U -u "$p"
  no_such_path -u -U "$p"
  no_such_path --transport unix-dgram "$p"
  no_such_path --transport unix-seqpacket "$p"
  no_such_path -U --transport unix-seqpacket "$p"
  no_such_path -U --transport unix-dgram "$p"
  no_such_path -Uu --dgram-size 100 --no-dgram-eof "$p"
  no_such_path -U --transport unix-seqpacket --dgram-size 64K "$p"
}

@test "--transport tcp is the default: connection refused like plain TCP" {
  closed_port 127.0.0.1
  run -3 --separate-stderr timeout 10 "$FASTCAT" --transport tcp 127.0.0.1 "$CLOSED_PORT" </dev/null
  assert_equal "$stderr" "fastcat: connect 127.0.0.1:$CLOSED_PORT: Connection refused"
}

@test "UDP ports are checked like TCP ports: connect 1..65535, listen 0..65535" {
  usage_err "fastcat: port 0: must be 1 to 65535" -u 127.0.0.1 0
  usage_err "fastcat: port 99999: must be 1 to 65535" -u 127.0.0.1 99999
  usage_err "fastcat: port 99999: must be 0 to 65535" -u -l 127.0.0.1 99999
  usage_err "fastcat: port http: not a number" -u 127.0.0.1 http
  usage_err "fastcat: missing port" -u 127.0.0.1
}
