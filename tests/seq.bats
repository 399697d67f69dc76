#!/usr/bin/env bats
# seq.bats - --seq: numbered datagrams, and the receiver's count of lost, duplicated and
# reordered ones agrees with what the sender sent.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
}

@test "--seq over unix-dgram, --dgram-size 1024, 4 MiB: byte-exact, 4096 datagrams, nothing lost, exit 0" {
  mkpayload "$T/A" 4194304
  fc_ulisten L -- -Uu --seq --report=json
  run -0 --separate-stderr fcx "$T/A" "$T/c.out" -Uu --seq --dgram-size 1024 --report=json "$L_PATH"
  printf '%s\n' "$stderr" >"$T/c.err"
  local rc l
  wait_exit rc "$L_PID" 20
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$T/A" "$T/L.out"
  l=$(json_report "$T/L.err")
  jq_is "$(json_report "$T/c.err")" .sent.datagrams 4096
  jq_is "$l" '[.received.datagrams, .received.lost, .received.duplicated, .received.reordered] | map(tostring) | join(" ")' "4096 0 0 0"
}

@test "--seq over UDP with a receiver that cannot keep up: received + lost = sent, exit 5 naming the loss" {
  mkpayload "$T/A" 20971520
  # The receiver is stopped (SIGSTOP) for 1 s once the first datagram has reached it,
  # while the sender sends the rest: its small receive buffer must overflow, however
  # fast it would have drained it. The pause before stdin's EOF lets it drain, so the
  # EOF datagram itself is not among the losses.
  fc_listen L -u --seq -I 64k --report=json
  (wait_for_line "$T/L.err" 'connection from' "$L_PID" && kill -STOP "$L_PID" && sleep 1
    kill -CONT "$L_PID") 2>/dev/null &
  local stopper=$!
  run -0 --separate-stderr bash -c '{ head -c 65536 "$1"; sleep 0.3; tail -c +65537 "$1"; sleep 1.5; } |
    "$FASTCAT" -u --seq --report=json 127.0.0.1 "$2" >"$3"' _ "$T/A" "$L_PORT" "$T/c.out"
  printf '%s\n' "$stderr" >"$T/c.err"
  wait "$stopper" || true
  local rc sent got lost
  wait_exit rc "$L_PID" 20
  assert_equal "listener exit $rc" "listener exit 5"
  sent=$(jq -r .sent.datagrams <<<"$(json_report "$T/c.err")")
  got=$(jq -r .received.datagrams <<<"$(json_report "$T/L.err")")
  lost=$(jq -r .received.lost <<<"$(json_report "$T/L.err")")
  ((lost > 0)) || fail "nothing lost while the receiver was stopped: the test proves nothing"
  assert_equal "received $got + lost $lost" "received $got + lost $((sent - got))"
  grep -qx "fastcat: $lost datagrams lost (--seq found gaps in the sequence numbers)" "$T/L.err" ||
    fail "no loss message in: $(cat "$T/L.err")"
  # the report counts exactly what reached stdout
  jq_is "$(json_report "$T/L.err")" .received.bytes "$(stat -c %s "$T/L.out")"
}

@test "--seq needs a datagram transport; with UDP -B may not exceed 65527 minus the 8-byte number" {
  run -2 "$FASTCAT" --seq 127.0.0.1 9
  assert_output "fastcat: --seq: needs a datagram transport (udp, unix-dgram, unix-seqpacket)"
  run -2 "$FASTCAT" -u --seq -B 65527 127.0.0.1 9
  assert_output --partial "a UDP datagram holds at most 65527 bytes"
}

# seq_send PORT ORDER...: python3 sends --seq datagrams to 127.0.0.1:PORT from one
# socket, 10 ms apart: a number N is datagram N (its 8-byte number, then 1024
# bytes of "N,"), "eofN" the EOF datagram counting N. Datagram N's payload goes to
# $T/sent.N for the byte-exact check.
seq_send() {
  local port=$1
  shift
  python3 - "$port" "$T" "$@" <<'PY'
import socket, struct, sys, time
port, tdir, order = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for item in order:
    if item.startswith("eof"):
        s.sendto(struct.pack(">Q", int(item[3:])), ("127.0.0.1", port))
    else:
        n = int(item)
        payload = (b"%d," % n * 1024)[:1024]
        open("%s/sent.%d" % (tdir, n), "wb").write(payload)
        s.sendto(struct.pack(">Q", n) + payload, ("127.0.0.1", port))
    time.sleep(0.01)
PY
}

@test "--seq: an EOF datagram that overtook the last two: they are taken as reordered, not lost; exit 0, byte-exact" {
  need python3
  fc_listen L -u --seq --report=json
  seq_send "$L_PORT" 0 1 2 3 4 5 6 7 eof10 8 9
  local rc l i
  wait_exit rc "$L_PID" 10
  l=$(json_report "$T/L.err")
  jq_is "$l" '[.received.datagrams, .received.lost, .received.reordered] | map(tostring) | join(" ")' "10 0 2"
  assert_equal "listener exit $rc" "listener exit 0"
  for i in 0 1 2 3 4 5 6 7 8 9; do cat "$T/sent.$i"; done >"$T/want"
  assert_same_bytes "$T/want" "$T/L.out"
}

@test "--seq: gaps the EOF datagram leaves open are lost once the stragglers' grace is over: exit 5, no hang" {
  need python3
  fc_listen L -u --seq --report=json
  local rc l start
  start=$(date +%s%N)
  seq_send "$L_PORT" 0 1 2 4 5 eof8
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 5"
  l=$(json_report "$T/L.err")
  jq_is "$l" '[.received.datagrams, .received.lost, .received.reordered] | map(tostring) | join(" ")' "5 3 0"
  error_line_in "$T/L.err" "3 datagrams lost"
  # the grace is a quarter of a second, not a wait for -w or forever
  (($(date +%s%N) - start < 3000000000)) || fail "the receiver took $((($(date +%s%N) - start) / 1000000)) ms to end"
}
