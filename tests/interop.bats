#!/usr/bin/env bats
# interop.bats - fastcat against nc.openbsd and socat, the peer listening or
# connecting; data flows both directions at once and is compared by sha256.

load helpers

setup_file() {
  mkpayload "$BATS_FILE_TMPDIR/A" $((2 * 1048576 + 3))   # fastcat sends
  mkpayload "$BATS_FILE_TMPDIR/B" $((1048576 + 1))       # peer sends
}

setup() {
  A=$BATS_FILE_TMPDIR/A
  B=$BATS_FILE_TMPDIR/B
  T=$BATS_TEST_TMPDIR
}

@test "nc.openbsd listens (-N), fastcat connects: both directions byte-exact" {
  need nc.openbsd
  nc_listen N --in "$B" -- -N
  run -0 fcx "$A" "$T/fc.out" 127.0.0.1 "$N_PORT"
  check_both "$N_PID" "$T/N.out" "$T/fc.out"
}

@test "fastcat listens, nc.openbsd connects (-N): both directions byte-exact" {
  need nc.openbsd
  fc_listen L --in "$A"
  run -0 io "$B" "$T/nc.out" nc.openbsd -N 127.0.0.1 "$L_PORT"
  check_both "$L_PID" "$T/nc.out" "$T/L.out"
}

@test "IPv6: nc.openbsd listens on ::1, fastcat connects; then fastcat listens on ::1, nc connects" {
  need nc.openbsd
  skip_unless_ipv6
  nc_listen N --addr ::1 --in "$B" -- -6 -N
  run -0 fcx "$A" "$T/fc.out" ::1 "$N_PORT"
  check_both "$N_PID" "$T/N.out" "$T/fc.out"
  fc_listen L --addr ::1 --in "$A"
  run -0 io "$B" "$T/nc.out" nc.openbsd -6 -N ::1 "$L_PORT"
  check_both "$L_PID" "$T/nc.out" "$T/L.out"
}

@test "socat listens, fastcat connects: both directions byte-exact" {
  need socat
  socat_listen S --in "$B" -- -t 30 TCP-LISTEN:0,bind=127.0.0.1 STDIO
  run -0 fcx "$A" "$T/fc.out" 127.0.0.1 "$S_PORT"
  check_both "$S_PID" "$T/S.out" "$T/fc.out"
}

@test "fastcat listens, socat connects: both directions byte-exact" {
  need socat
  fc_listen L --in "$A"
  run -0 io "$B" "$T/so.out" socat -t 30 STDIO "TCP:127.0.0.1:$L_PORT"
  check_both "$L_PID" "$T/so.out" "$T/L.out"
}

@test "one-way to nc.openbsd without -N (peer closes only at the end): fastcat exits 0, data intact" {
  need nc.openbsd
  nc_listen N
  run -0 fcx "$A" "$T/fc.out" 127.0.0.1 "$N_PORT"
  local rc
  wait_exit rc "$N_PID" 30
  assert_equal "nc exit $rc" "nc exit 0"
  assert_same_bytes "$A" "$T/N.out"
  assert_equal "$(stat -c %s "$T/fc.out")" 0
}

@test "one-way from socat -u (socat sends, then closes): fastcat </dev/null receives every byte" {
  need socat
  socat_listen S --in "$B" -- -u STDIN TCP-LISTEN:0,bind=127.0.0.1
  run -0 fcx /dev/null "$T/fc.out" 127.0.0.1 "$S_PORT"
  local rc
  wait_exit rc "$S_PID" 30
  assert_equal "socat exit $rc" "socat exit 0"
  assert_same_bytes "$B" "$T/fc.out"
}

@test "half-close: socat server replies only after fastcat's EOF (sha256 of the request)" {
  need socat
  socat_listen S -- -t 20 TCP-LISTEN:0,bind=127.0.0.1 SYSTEM:sha256sum
  FC_TIMEOUT=30 run -0 fcx "$A" "$T/reply" 127.0.0.1 "$S_PORT"
  assert_equal "$(cat "$T/reply")" "$(sha256sum <"$A")"
  local rc
  wait_exit rc "$S_PID" 30
  assert_equal "socat exit $rc" "socat exit 0"
}
