#!/usr/bin/env bats
# eof.bats - EOF policy: half-close, request/reply, --exit-on-peer-eof,
# -k, -q, -d, --send-only.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
}

@test "request/reply: the listener's program reads the request to EOF, then replies (stdout closed on peer EOF)" {
  mkpayload "$T/req" 1048577
  mkfifo "$T/to_srv" "$T/from_srv"
  # server program: fastcat stdout -> to_srv -> sha256sum -> from_srv -> fastcat stdin
  bg_start SRV "$T/to_srv" "$T/from_srv" sha256sum
  fc_listen L --in "$T/from_srv" --out "$T/to_srv"
  FC_TIMEOUT=30 run -0 fcx "$T/req" "$T/reply" 127.0.0.1 "$L_PORT"
  assert_equal "$(cat "$T/reply")" "$(sha256sum <"$T/req")"
  local rc
  listener_ok 10
  wait_exit rc "$SRV_PID" 10
  assert_equal "server program exit $rc" "server program exit 0"
}

@test "listener with </dev/null receives every byte of 16 MiB" {
  mkpayload "$T/p" $((16 * 1048576))
  fc_listen L
  run -0 fcx "$T/p" "$T/c.out" 127.0.0.1 "$L_PORT"
  listener_ok 30
  assert_same_bytes "$T/p" "$T/L.out"
  assert_equal "$(stat -c %s "$T/c.out")" 0
}

@test "client with </dev/null receives every byte of 16 MiB" {
  mkpayload "$T/p" $((16 * 1048576))
  fc_listen L --in "$T/p"
  run -0 fcx /dev/null "$T/c.out" 127.0.0.1 "$L_PORT"
  listener_ok 30
  assert_same_bytes "$T/p" "$T/c.out"
}

@test "--exit-on-peer-eof: exits once the peer closed, though stdin stays open" {
  printf 'reply from the listener\n' >"$T/reply"
  mkfifo "$T/stdin"
  fc_listen L --in "$T/reply"
  hold_open HOLD "$T/stdin" 30
  local start rc
  start=$(now_us)
  bg_start C "$T/stdin" "$T/c.out" "$FASTCAT" --exit-on-peer-eof 127.0.0.1 "$L_PORT"
  wait_exit rc "$C_PID" 10
  local ms
  ms=$(elapsed_ms "$start")
  assert_equal "client exit $rc" "client exit 0"
  (( ms < 5000 )) || fail "client took ${ms} ms to exit after the peer's EOF"
  assert_same_bytes "$T/reply" "$T/c.out"
  is_alive "$HOLD_PID" || fail "stdin writer ended early; the test proves nothing"
  listener_ok 10
}

@test "--exit-on-peer-eof with stdin a file the peer did not wait for: exit 5, naming the bytes of stdin not sent" {
  mkpayload "$T/a.8M" 8388608
  # the listener's stdin is empty: its EOF comes at once; the sender, rate-limited, is far from done
  fc_listen L
  run -5 --separate-stderr fcx "$T/a.8M" "$T/c.out" --exit-on-peer-eof --rate-limit 4M 127.0.0.1 "$L_PORT"
  [[ $stderr =~ ^fastcat:\ the\ peer\ ended\ first\ \(--exit-on-peer-eof\):\ ([0-9]+)\ bytes\ of\ stdin\ not\ sent$ ]] ||
    fail "no count of what was not sent: $stderr"
  local left=${BASH_REMATCH[1]}
  ((left > 0 && left < 8388608)) || fail "$left bytes not sent of 8388608"
  # the sender failed, so it resets: the receiver learns its stream is short too
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 5"
  (($(stat -c %s "$T/L.out") + left <= 8388608)) || fail "the receiver has more than was sent"
}

@test "without --exit-on-peer-eof: keeps running after the peer's EOF until stdin ends, then exits 0" {
  printf 'reply from the listener\n' >"$T/reply"
  mkfifo "$T/stdin"
  fc_listen L --in "$T/reply"
  hold_open HOLD "$T/stdin" 30
  bg_start C "$T/stdin" "$T/c.out" "$FASTCAT" 127.0.0.1 "$L_PORT"
  wait_for_size "$T/c.out" "$(stat -c %s "$T/reply")"
  sleep 1   # give a wrong early exit time to happen
  is_alive "$C_PID" || fail "client exited though its stdin is still open"
  kill "$HOLD_PID"   # stdin ends now
  local rc
  wait_exit rc "$C_PID" 10
  assert_equal "client exit $rc" "client exit 0"
  listener_ok 10
  assert_same_bytes "$T/reply" "$T/c.out"
}

@test "stdin a terminal: --exit-on-peer-eof is the default there; --no-exit-on-peer-eof turns it off" {
  command -v script >/dev/null || skip "script (util-linux) not installed"
  printf 'reply from the listener\n' >"$T/reply"
  mkfifo "$T/tin"
  hold_open HOLD "$T/tin" 30
  local start ms rc
  # script(1) gives fastcat a pty as stdin and stdout
  fc_listen L --in "$T/reply"
  start=$(now_us)
  bg_start S "$T/tin" "$T/s.out" script -q -e -c "$(printf '%q ' "$FASTCAT" 127.0.0.1 "$L_PORT")" /dev/null
  wait_exit rc "$S_PID" 10
  ms=$(elapsed_ms "$start")
  assert_equal "fastcat on a tty: exit $rc" "fastcat on a tty: exit 0"
  (( ms < 5000 )) || fail "took ${ms} ms to exit after the peer's EOF"
  grep -q 'reply from the listener' "$T/s.out" || fail "reply not received: $(cat "$T/s.out")"

  fc_listen L2 --in "$T/reply"
  bg_start S2 "$T/tin" "$T/s2.out" script -q -e -c "$(printf '%q ' "$FASTCAT" --no-exit-on-peer-eof 127.0.0.1 "$L2_PORT")" /dev/null
  wait_for_line "$T/s2.out" 'reply from the listener' "$S2_PID"
  sleep 1   # give a wrong early exit time to happen
  is_alive "$S2_PID" || fail "--no-exit-on-peer-eof: exited though the terminal stays open"
}

@test "-k: serves 3 clients one after another, one JSON report each, stays listening" {
  local i rc
  mkpayload "$T/p1" 1000
  mkpayload "$T/p2" 70000
  mkpayload "$T/p3" 1048577
  fc_listen L -k -d --report=json
  for i in 1 2 3; do
    run -0 fcx "$T/p$i" "$T/c$i.out" 127.0.0.1 "$L_PORT"
  done
  cat "$T/p1" "$T/p2" "$T/p3" >"$T/all"
  wait_for_size "$T/L.out" "$(stat -c %s "$T/all")"
  assert_same_bytes "$T/all" "$T/L.out"
  wait_for_count "$T/L.err" '^\{"fastcat":' 3 "$L_PID"
  for i in 1 2 3; do
    jq_is "$(json_report "$T/L.err" "$i")" .received.bytes "$(stat -c %s "$T/p$i")"
  done
  is_alive "$L_PID" || fail "-k listener exited after 3 clients"
  # and a 4th client still gets served
  run -0 fcx "$T/p1" "$T/c4.out" 127.0.0.1 "$L_PORT"
}

@test "-q 0: exits right after stdin EOF although the peer never closes" {
  mkpayload "$T/p" 100000
  mkfifo "$T/lin"
  hold_open HOLD "$T/lin" 30
  fc_listen L --in "$T/lin"
  local start ms
  start=$(now_us)
  FC_TIMEOUT=20 run -0 fcx "$T/p" "$T/c.out" -q 0 127.0.0.1 "$L_PORT"
  ms=$(elapsed_ms "$start")
  (( ms < 3000 )) || fail "-q 0 took ${ms} ms"
  wait_for_size "$T/L.out" 100000
  assert_same_bytes "$T/p" "$T/L.out"
  is_alive "$L_PID" || fail "peer ended; the test proves nothing"
}

@test "-q 1: waits about 1 s for the peer's EOF, then exits 0" {
  mkpayload "$T/p" 100000
  mkfifo "$T/lin"
  hold_open HOLD "$T/lin" 30
  fc_listen L --in "$T/lin"
  local start ms
  start=$(now_us)
  FC_TIMEOUT=20 run -0 fcx "$T/p" "$T/c.out" -q 1 127.0.0.1 "$L_PORT"
  ms=$(elapsed_ms "$start")
  (( ms >= 900 )) || fail "-q 1 exited after only ${ms} ms"
  (( ms < 5000 )) || fail "-q 1 took ${ms} ms"
  wait_for_size "$T/L.out" 100000
  assert_same_bytes "$T/p" "$T/L.out"
  is_alive "$L_PID" || fail "peer ended; the test proves nothing"
}

@test "-d: does not read stdin, receives everything, exits 0 on the peer's EOF" {
  mkpayload "$T/reply" 300000
  printf 'this must not be read by fastcat -d\n' >"$T/stdin"
  fc_listen L --in "$T/reply"
  # the same open stdin is passed on to cat after fastcat: whatever
  # fastcat did not read is left for cat
  run -0 bash -c '( timeout 20 "$1" -d 127.0.0.1 "$2" >"$3"; rc=$?; cat >"$4"; exit $rc ) <"$5"' \
    _ "$FASTCAT" "$L_PORT" "$T/c.out" "$T/rest" "$T/stdin"
  assert_same_bytes "$T/reply" "$T/c.out"
  assert_same_bytes "$T/stdin" "$T/rest"
  local rc
  listener_ok 10
  assert_equal "bytes the listener got: $(stat -c %s "$T/L.out")" "bytes the listener got: 0"
}

@test "--send-only: sends stdin, writes nothing, and -q bounds the wait for a peer that never closes" {
  mkpayload "$T/p" 200000
  mkfifo "$T/lin"
  hold_open HOLD "$T/lin" 30   # the listener never sends nor closes
  fc_listen L --in "$T/lin"
  local start ms
  start=$(now_us)
  FC_TIMEOUT=20 run -0 fcx "$T/p" "$T/c.out" --send-only -q 0.5 127.0.0.1 "$L_PORT"
  ms=$(elapsed_ms "$start")
  (( ms < 3000 )) || fail "--send-only -q 0.5 took ${ms} ms"
  wait_for_size "$T/L.out" 200000
  assert_same_bytes "$T/p" "$T/L.out"
  assert_equal "stdout bytes: $(stat -c %s "$T/c.out")" "stdout bytes: 0"
  is_alive "$L_PID" || fail "peer ended; the test proves nothing"
}

@test "--send-only: after stdin EOF it waits for the peer's EOF, dropping what the peer sends" {
  mkpayload "$T/p" 100000
  mkpayload "$T/reply" 300000
  fc_listen L --in "$T/reply"
  FC_TIMEOUT=20 run -0 fcx "$T/p" "$T/c.out" --send-only 127.0.0.1 "$L_PORT"
  assert_equal "stdout bytes: $(stat -c %s "$T/c.out")" "stdout bytes: 0"
  listener_ok 10
  assert_same_bytes "$T/p" "$T/L.out"
}

@test "--send-only: the peer still gets every byte when it has sent something fastcat never reads" {
  mkpayload "$T/p" 2000000
  printf 'hello\n' >"$T/hello"
  mkfifo "$T/lin"
  # the listener sends one line, then keeps its stdin open
  bg_start HOLD /dev/null "$T/lin" sh -c 'cat "$1"; exec sleep 30' _ "$T/hello"
  fc_listen L --in "$T/lin"
  FC_TIMEOUT=20 run -0 fcx "$T/p" "$T/c.out" --send-only -q 1 127.0.0.1 "$L_PORT"
  assert_equal "stdout bytes: $(stat -c %s "$T/c.out")" "stdout bytes: 0"
  # fastcat said 0: every byte must arrive (closing with unread input makes
  # the kernel send RST and drop what is still queued)
  wait_for_size "$T/L.out" 2000000 5 || true
  assert_same_bytes "$T/p" "$T/L.out"
}
