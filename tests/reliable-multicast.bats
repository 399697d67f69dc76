#!/usr/bin/env bats
# reliable-multicast.bats - --reliable to a multicast group (IPv4, and one IPv6), in a network namespace of
# the test's own (its loopback carries the group: multicast on, 224.0.0.0/4 routed there):
# three receivers byte-exact, each confirming; one that joins while the sender waits; one
# that starts once the data flows (exit 3, told why); one killed mid-stream and one whose stdout
# stops taking, and one that holds the group below --min-rate (each dropped after -w and
# named, the others byte-exact, the sender exit 5);
# a plain fastcat on the group (left out, nothing written); an IPv6 group; usage errors.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
  [ "$(id -u)" = 0 ] || skip "needs root for a network namespace"
  NS=fcmc$$
  ip netns add "$NS" || skip "cannot make a network namespace"
  ip -n "$NS" link set lo up
  ip -n "$NS" link set lo multicast on
  # the source address a group's datagrams go out with: lo's, or they would leave as 0.0.0.0
  ip -n "$NS" route add 224.0.0.0/4 dev lo src 127.0.0.1
  GROUP=239.1.2.3
  PIDS=()
}

teardown() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -n "${NS:-}" ] && ip netns del "$NS" 2>/dev/null || true
}

# mc_receiver N [opts]: fastcat -lu --reliable on the group as receiver N, output $T/rN.out.
mc_receiver() {
  local n=$1
  shift
  ip netns exec "$NS" "$FASTCAT" -lu --reliable "$@" "$GROUP" 9000 >"$T/r$n.out" 2>"$T/r$n.err" &
  eval "R${n}_PID=$!"
  PIDS+=("$!")
}

# mc_joined N: N sockets have joined the group (the users of its membership on lo).
mc_joined() {
  local i users
  for i in $(seq 100); do
    users=$(ip netns exec "$NS" awk '$1 == "030201EF" { print $2 }' /proc/net/igmp)
    [ "${users:-0}" -ge "$1" ] && return 0
    sleep 0.05
  done
  return 1
}

# mc_grown FILE BYTES: wait (4 s at most) until a receiver's FILE holds more than BYTES.
mc_grown() {
  local i
  for i in $(seq 200); do
    [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -gt "$2" ] && return 0
    sleep 0.02
  done
}

# mc_send IN [opts]: the sender of IN to the group; its status in SENT_RC, stderr $T/s.err.
mc_send() {
  local in=$1
  shift
  SENT_RC=0
  timeout -k 5 120 ip netns exec "$NS" "$FASTCAT" -u --reliable "$@" "$GROUP" 9000 <"$in" >/dev/null \
    2>"$T/s.err" || SENT_RC=$?
}

# mc_receiver_rc N: waits for receiver N (in this shell: it is its child); its status in status.
mc_receiver_rc() {
  local pid
  pid=$(eval echo "\$R${1}_PID")
  status=0
  wait "$pid" || status=$?
}

# mc_three_receivers_2_into CMD...: receivers 1 and 3 as mc_receiver, receiver 2 (-w 30)
# writing into a pipe that CMD reads; returns once the three joined.
mc_three_receivers_2_into() {
  mkfifo "$T/r2.fifo"
  "$@" <"$T/r2.fifo" &
  PIDS+=("$!")
  ip netns exec "$NS" "$FASTCAT" -lu --reliable -w 30 "$GROUP" 9000 >"$T/r2.fifo" 2>"$T/r2.err" &
  R2_PID=$!
  PIDS+=("$!")
  for n in 1 3; do mc_receiver $n; done
  mc_joined 3
  sleep 0.2
}

# mc_dropped_receiver_2 ERE: the sender exited 5 having dropped receiver 2 (why: ERE) and
# named it; receivers 1 and 3 exited 0, byte-exact with $T/a.
mc_dropped_receiver_2() {
  assert_equal "sender exit $SENT_RC" "sender exit 5"
  grep -Eq "^fastcat: warning: --reliable: receiver 127\\.0\\.0\\.1:9000 dropped: $1, [0-9]+ of [0-9]+ bytes confirmed\$" "$T/s.err" ||
    { cat "$T/s.err"; false; }
  grep -Eq '^fastcat: --reliable: 2 of 3 receivers confirmed the stream; dropped: 127\.0\.0\.1:9000 \([0-9]+ bytes\)$' "$T/s.err" ||
    { cat "$T/s.err"; false; }
  for n in 1 3; do
    mc_receiver_rc $n
    assert_equal "receiver $n exit $status" "receiver $n exit 0"
    assert_same_bytes "$T/a" "$T/r$n.out"
  done
}

# mc_told_receiver_2: receiver 2 (still running when dropped) was told so: exit 5, at once
# (its -w is 30 s), saying how much it wrote.
mc_told_receiver_2() {
  mc_receiver_rc 2
  assert_equal "receiver 2 exit $status" "receiver 2 exit 5"
  grep -Eq '^fastcat: --reliable: the sender dropped this receiver \(its message says why\): [0-9]+ bytes written in order$' "$T/r2.err" ||
    { cat "$T/r2.err"; false; }
}

@test "multicast: three receivers on a group, byte-exact; the sender exits 0 once each confirmed" {
  mkpayload "$T/a" $((8 * 1024 * 1024 + 5))
  for n in 1 2 3; do mc_receiver $n; done
  mc_joined 3
  sleep 0.2
  # --min-rate 1M: a group that takes more loses no one
  mc_send "$T/a" --receivers 3 --min-rate 1M -v
  [ "$SENT_RC" = 0 ] || { cat "$T/s.err"; false; }
  for n in 1 2 3; do
    mc_receiver_rc $n
    assert_equal "receiver $n exit $status" "receiver $n exit 0"
    assert_same_bytes "$T/a" "$T/r$n.out"
  done
  grep -q "^fastcat: verified: each of the 3 receivers wrote the $((8 * 1024 * 1024 + 5)) bytes sent" "$T/s.err"
  [ "$(grep -c 'answered in' "$T/s.err")" = 3 ]
  # the report: a line each receiver, with a tag of its own
  for n in 1 2 3; do
    grep -Eq "^fastcat: --reliable: receiver $n of 3, 127\.0\.0\.1:9000 \(tag [0-9]+\): whole, $((8 * 1024 * 1024 + 5)) bytes; path [0-9.]+ Mbit/s, round trip [0-9.]+ ms \(min [0-9.]+\), [1-9][0-9]* acknowledgements \([0-9]+ naming gaps\), [0-9]+ bytes taken for lost$" "$T/s.err" ||
      { cat "$T/s.err"; false; }
  done
  [ "$(sed -nE 's/.*\(tag ([0-9]+)\).*/\1/p' "$T/s.err" | sort -u | wc -l)" = 3 ]
}

@test "multicast: a receiver that joins while the sender waits for --receivers 2 is served too" {
  mkpayload "$T/a" $((4 * 1024 * 1024 + 1))
  mc_receiver 1
  mc_joined 1
  ( sleep 1.2; rc=0
    ip netns exec "$NS" "$FASTCAT" -lu --reliable "$GROUP" 9000 >"$T/r2.out" 2>"$T/r2.err" || rc=$?
    echo "$rc" >"$T/r2.rc" ) &
  PIDS+=("$!")
  mc_send "$T/a" --receivers 2
  [ "$SENT_RC" = 0 ] || { cat "$T/s.err"; false; }
  mc_receiver_rc 1
  assert_equal "receiver 1 exit $status" "receiver 1 exit 0"
  for i in $(seq 50); do [ -s "$T/r2.rc" ] && break; sleep 0.1; done
  assert_equal "late receiver exit $(cat "$T/r2.rc")" "late receiver exit 0"
  assert_same_bytes "$T/a" "$T/r1.out"
  assert_same_bytes "$T/a" "$T/r2.out"
}

@test "multicast: a receiver that starts once the data flows exits 3 saying so, writes nothing; the session goes on" {
  mkpayload "$T/a" $((16 * 1024 * 1024))
  mc_receiver 1
  mc_joined 1
  ( mc_grown "$T/r1.out" 1000000
    rc=0
    ip netns exec "$NS" "$FASTCAT" -lu --reliable "$GROUP" 9000 >"$T/late.out" 2>"$T/late.err" || rc=$?
    echo "$rc" >"$T/late.rc" ) &
  PIDS+=("$!")
  mc_send "$T/a" --rate-limit 8M
  [ "$SENT_RC" = 0 ] || { cat "$T/s.err"; false; }
  mc_receiver_rc 1
  assert_equal "receiver exit $status" "receiver exit 0"
  assert_same_bytes "$T/a" "$T/r1.out"
  for i in $(seq 50); do [ -s "$T/late.rc" ] && break; sleep 0.1; done
  assert_equal "late receiver exit $(cat "$T/late.rc")" "late receiver exit 3"
  grep -q "^fastcat: --reliable: 127\.0\.0\.1:[0-9]*'s session was under way without this receiver (its hello went before): start the receivers first; nothing written$" "$T/late.err" ||
    { cat "$T/late.err"; false; }
  [ ! -s "$T/late.out" ]
}

@test "multicast: a receiver killed mid-stream is dropped after -w and named; the others end byte-exact, the sender exits 5" {
  mkpayload "$T/a" $((24 * 1024 * 1024))
  for n in 1 2 3; do mc_receiver $n; done
  mc_joined 3
  sleep 0.2
  ( mc_grown "$T/r2.out" 2000000
    kill -9 "$R2_PID" ) &
  PIDS+=("$!")
  mc_send "$T/a" --receivers 3 --rate-limit 40M -w 2
  mc_dropped_receiver_2 'said nothing for 2 s'
  # what the killed one wrote is the stream's first bytes
  head -c "$(stat -c %s "$T/r2.out")" "$T/a" | cmp -s - "$T/r2.out"
}

@test "multicast: a receiver whose stdout stops taking is dropped after -w and named; the others end byte-exact, the sender exits 5" {
  mkpayload "$T/a" $((48 * 1024 * 1024))
  # takes 2 MB, then holds the pipe open without reading: receiver 2's store fills and stays full
  mc_three_receivers_2_into sh -c 'head -c 2000000 >"$1"; exec sleep 60' _ "$T/r2.out"
  mc_send "$T/a" --receivers 3 -w 2 --report=json
  j=$(json_report "$T/s.err")
  jq_is "$j" '[.receivers[].state] | sort | join(",")' dropped,whole,whole
  jq_is "$j" '[.receivers[] | select(.state == "whole") | .bytes] | unique | join(",")' $((48 * 1024 * 1024))
  jq_is "$j" '.receivers[] | select(.state == "dropped") | .error' \
    'it took nothing for 2 s while the others waited for it (its store stayed full: its stdout does not drain)'
  jq_true "$j" '[.receivers[] | select(.state == "whole") | .exact and .xxh64 != null and .acks > 0 and .rtt_ms >= 0 and .path_bps > 0] | all'
  jq_true "$j" '.receivers[] | select(.state == "dropped") | .exact == false and .bytes < 48 * 1024 * 1024 and .xxh64 == null'
  jq_true "$j" '[.receivers[].tag] | unique | length == 3'
  mc_dropped_receiver_2 'it took nothing for 2 s while the others waited for it \(its store stayed full: its stdout does not drain\)'
  mc_told_receiver_2
  head -c 2000000 "$T/a" | cmp -s - "$T/r2.out"
}

@test "multicast --min-rate: a receiver that holds the group below it for -w is dropped and named; the others end byte-exact" {
  command -v pv >/dev/null || skip "pv is not installed"
  mkpayload "$T/a" $((48 * 1024 * 1024))
  # receiver 2's stdout takes 2 MiB/s: once its store is full, the group gets that
  mc_three_receivers_2_into sh -c 'exec pv -q -L 2m >"$1"' _ "$T/r2.out"
  mc_send "$T/a" --receivers 3 --min-rate 8M -w 2
  mc_dropped_receiver_2 'the group took less than --min-rate 8 MiB/s for 2 s, waiting for this receiver'
  mc_told_receiver_2
  head -c "$(stat -c %s "$T/r2.out")" "$T/a" | cmp -s - "$T/r2.out"
}

@test "multicast: a plain fastcat on the group is left out and writes nothing; the sender serves the other and exits 5 naming the one that never answered" {
  mkpayload "$T/a" 1000000
  mc_receiver 1
  ip netns exec "$NS" "$FASTCAT" -lu "$GROUP" 9000 >"$T/plain.out" 2>"$T/plain.err" &
  PIDS+=("$!")
  mc_joined 2
  sleep 0.2
  mc_send "$T/a" --receivers 2 -w 2
  assert_equal "sender exit $SENT_RC" "sender exit 5"
  grep -q 'refused it (no -lu --reliable there): left out' "$T/s.err" || { cat "$T/s.err"; false; }
  grep -q '^fastcat: --reliable: 1 of 2 receivers confirmed the stream; 1 never answered$' "$T/s.err" ||
    { cat "$T/s.err"; false; }
  mc_receiver_rc 1
  assert_equal "receiver exit $status" "receiver exit 0"
  assert_same_bytes "$T/a" "$T/r1.out"
  [ ! -s "$T/plain.out" ]
}

@test "multicast over IPv6: two receivers on ff15::1234 by --mcast-if, byte-exact, each named in the report" {
  # IPv6 multicast does not loop back on lo: a veth pair in the namespace carries the group
  ip -n "$NS" link add mc0 type veth peer name mc1 || skip "cannot make a veth pair"
  ip -n "$NS" link set mc0 up
  ip -n "$NS" link set mc1 up
  ip -n "$NS" addr add fd00::1/64 dev mc0 nodad
  mkpayload "$T/a" $((3 * 1024 * 1024 + 7))
  for n in 1 2; do
    ip netns exec "$NS" "$FASTCAT" -lu --reliable --mcast-if mc0 ff15::1234 9000 >"$T/r$n.out" 2>"$T/r$n.err" &
    eval "R${n}_PID=$!"
    PIDS+=("$!")
  done
  for i in $(seq 100); do
    [ "$(ip netns exec "$NS" awk '$2 == "mc0" && $3 == "ff150000000000000000000000001234" { print $4 }' /proc/net/igmp6)" = 2 ] && break
    sleep 0.05
  done
  timeout -k 5 60 ip netns exec "$NS" "$FASTCAT" -u --reliable --mcast-if mc0 --receivers 2 -v \
    ff15::1234 9000 <"$T/a" 2>"$T/s.err" || { cat "$T/s.err"; false; }
  for n in 1 2; do
    mc_receiver_rc $n
    assert_equal "receiver $n exit $status" "receiver $n exit 0"
    assert_same_bytes "$T/a" "$T/r$n.out"
    grep -Eq "^fastcat: --reliable: receiver $n of 2, \[fd00::1\]:9000 \(tag [0-9]+\): whole, $((3 * 1024 * 1024 + 7)) bytes;" "$T/s.err" ||
      { cat "$T/s.err"; false; }
  done
  grep -q "^fastcat: --reliable: [0-9]* datagrams of up to 1420 bytes" "$T/s.err" || { cat "$T/s.err"; false; }
}

@test "multicast usage: --receivers to a unicast address, without --reliable, or at -l: exit 2 naming it" {
  run -2 --separate-stderr "$FASTCAT" -u --reliable --receivers 2 127.0.0.1 9
  assert_equal "$stderr" "fastcat: --receivers: 127.0.0.1:9 is no multicast group"
  run -2 --separate-stderr "$FASTCAT" -u --receivers 2 "$GROUP" 9000
  [[ "$stderr" == "fastcat: --receivers: the --reliable sender's"* ]]
  run -2 --separate-stderr "$FASTCAT" -lu --reliable --receivers 2 "$GROUP" 9000
  [[ "$stderr" == "fastcat: --receivers: the --reliable sender's"* ]]
  run -2 --separate-stderr "$FASTCAT" -u --reliable --min-rate 8M 127.0.0.1 9
  assert_equal "$stderr" "fastcat: --min-rate: 127.0.0.1:9 is no multicast group"
  run -2 --separate-stderr "$FASTCAT" -lu --reliable --min-rate 8M "$GROUP" 9000
  [[ "$stderr" == "fastcat: --min-rate: the --reliable sender's"* ]]
  run -2 --separate-stderr "$FASTCAT" --ttl 4 127.0.0.1 9
  assert_equal "$stderr" "fastcat: --ttl: udp only (-u), not tcp"
  run -2 --separate-stderr ip netns exec "$NS" "$FASTCAT" -u --reliable --mcast-if nosuch0 "$GROUP" 9000
  assert_equal "$stderr" "fastcat: --mcast-if nosuch0: no such interface"
}
