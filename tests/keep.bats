#!/usr/bin/env bats
# keep.bats - -k on the other transports: a Unix stream listener and a UDP listener on
# port 0 serve three peers one after another, and keep their address between them.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
}

@test "-k over unix stream: three clients in turn, the socket file stays until the listener ends" {
  fc_ulisten L -- -k -U
  local i rc
  for i in 1 2 3; do
    printf 'msg%s\n' "$i" >"$T/in$i"
    run -0 fcx "$T/in$i" /dev/null -U "$L_PATH"
    [[ -S $L_PATH ]] || fail "socket file gone after client $i"
  done
  wait_for_size "$T/L.out" 15
  assert_equal "$(cat "$T/L.out")" "$(printf 'msg1\nmsg2\nmsg3')"
  kill -TERM "$L_PID"
  wait_exit rc "$L_PID" 10
  [[ ! -e $L_PATH ]] || fail "socket file left after the -k listener ended"
}

@test "-k over UDP on port 0: three senders in turn reach the same port, each locked onto in turn" {
  fc_listen L -u -k
  local i rc
  for i in 1 2 3; do
    printf 'umsg%s\n' "$i" >"$T/in$i"
    run -0 fcx "$T/in$i" /dev/null -u 127.0.0.1 "$L_PORT"
  done
  wait_for_size "$T/L.out" 18
  assert_equal "$(cat "$T/L.out")" "$(printf 'umsg1\numsg2\numsg3')"
  assert_equal "$(grep -c '^fastcat: connection from ' "$T/L.err")" 3
  kill -TERM "$L_PID"
  wait_exit rc "$L_PID" 10
}
