#!/usr/bin/env bats
# chain.bats - --chain: one stream through a list of fastcat receivers, each writing it to its
# stdout and forwarding it to the next; the sender exits 0 only when every receiver wrote the
# whole stream (count and XXH64). Receivers that cannot be reached, whose disk is full or that
# die are named; a plain peer at either end is refused before a byte of data moves. Loopback,
# every node a listener on port 0.

load helpers
load chain

@test "a chain of 1 from a pipe: byte-exact, the sender names it, both exit 0" {
  whole_chain 1 pipe
  grep -q "receiver 1 of 1, 127.0.0.1:$N1_PORT: wrote the $SIZE bytes (xxh64 [0-9a-f]\{16\})" \
    "$T/c.err"
}

@test "a chain of 3 from a file: byte-exact at every node, each one forwarding what it writes" {
  whole_chain 3 file
  grep -q "^fastcat: --chain: receiver 2 of 3, from 127.0.0.1:" "$T/N2.err"
  grep -q "^fastcat: --chain: receiver 3 of 3, 127.0.0.1:$N3_PORT, is ready" "$T/N2.err"
}

@test "a chain of 8 from a pipe: byte-exact at all 8" {
  whole_chain 8 pipe
}

@test "an empty stream through 3: every node exits 0 with an empty file" {
  : >"$A"
  SIZE=0
  whole_chain 3 file
}

@test "a receiver whose disk is full (stdout /dev/full): it exits 7 and forwards the rest; the sender names it and exits 8; the others are whole" {
  nodes 3 2=/dev/full
  send file
  assert_equal "sender exit $status" "sender exit 8"
  grep -q "receiver 2 of 3, 127.0.0.1:$N2_PORT: could not write: No space left on device" \
    "$T/c.err"
  grep -q "^fastcat: --chain: 2 of 3 receivers have the whole stream$" "$T/c.err"
  node_exits 2 7
  node_exits 1 0
  node_exits 3 0
  assert_same_bytes "$A" "$T/N1.out"
  assert_same_bytes "$A" "$T/N3.out"
}

@test "each hop keeps at most 256 KiB unsent in its socket (TCP_NOTSENT_LOWAT): the sender's and a node's" {
  command -v strace >/dev/null || skip "strace not installed"
  fc_listen N2 -- --chain
  FC_PREFIX=("${STRACE[@]}" -f -o "$T/n1.strace" -e trace=setsockopt)
  fc_listen N1 -- --chain
  FC_PREFIX=()
  LIST=127.0.0.1:$N1_PORT,127.0.0.1:$N2_PORT FIRST=$N1_PORT
  status=0
  "${STRACE[@]}" -f -o "$T/c.strace" -e trace=setsockopt "$FASTCAT" --chain "$LIST" 9 <"$A" \
    >/dev/null 2>"$T/c.err" || status=$?
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  node_exits 2 0
  local rc
  wait_exit rc "$N1_PID" 20
  grep -q "TCP_NOTSENT_LOWAT, \[262144\]" "$T/c.strace" || fail "sender: $(cat "$T/c.strace")"
  grep -q "TCP_NOTSENT_LOWAT, \[262144\]" "$T/n1.strace" || fail "node: $(cat "$T/n1.strace")"
  assert_same_bytes "$A" "$T/N2.out"
}

@test "--report=json at the sender: a receivers array, one object per receiver with its state, bytes and XXH64" {
  nodes 3 2=/dev/full
  send file --report=json
  assert_equal "sender exit $status" "sender exit 8"
  local j
  j=$(grep '^{"fastcat"' "$T/c.err")
  jq_is "$j" '.receivers | length' 3
  jq_is "$j" '.receivers[0].state' whole
  jq_is "$j" '.receivers[0].exact' true
  jq_is "$j" '.receivers[0].bytes' "$SIZE"
  jq_is "$j" '.receivers[0].host' "127.0.0.1:$N1_PORT"
  jq_is "$j" '.receivers[1].state' write_failed
  jq_is "$j" '.receivers[1].exact' false
  jq_is "$j" '.receivers[1].error' "No space left on device"
  jq_is "$j" '.receivers[2].exact' true
  jq_is "$j" '.receivers[2].xxh64' "$(xxhsum -H1 "$A" | cut -d' ' -f1)"
}

@test "--interval at the sender: each line says where the slowest receiver is" {
  nodes 3
  send file --rate-limit 4M --interval 0.5
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  grep -E "^fastcat: [0-9.]+ s: sent [0-9.]+ [KMG]?i?B \([^)]*\), slowest receiver [0-9.]+ [KMG]?i?B; [0-9]+%" \
    "$T/c.err" || fail "no line with the slowest receiver: $(cat "$T/c.err")"
}

@test "a receiver that is not listening at the start: named, skipped, the rest served; the sender exits 3" {
  closed_port
  nodes 2
  LIST="127.0.0.1:$N1_PORT,127.0.0.1:$CLOSED_PORT,127.0.0.1:$N2_PORT"
  send file
  assert_equal "sender exit $status" "sender exit 3"
  grep -q "receiver 2 of 3, 127.0.0.1:$CLOSED_PORT: not reached: Connection refused" "$T/c.err"
  grep -q "^fastcat: --chain: receiver 2, 127.0.0.1:$CLOSED_PORT, not reached: connect" \
    "$T/N1.err"
  node_exits 1 0
  node_exits 2 0
  assert_same_bytes "$A" "$T/N1.out"
  assert_same_bytes "$A" "$T/N2.out"
}

@test "the first receiver not listening: the sender goes to the second" {
  closed_port
  nodes 1
  LIST="127.0.0.1:$CLOSED_PORT,127.0.0.1:$N1_PORT"
  send pipe
  assert_equal "sender exit $status" "sender exit 3"
  grep -q "receiver 1 of 2, 127.0.0.1:$CLOSED_PORT: not reached" "$T/c.err"
  node_exits 1 0
  assert_same_bytes "$A" "$T/N1.out"
}

@test "a receiver killed mid-transfer is bypassed: its upstream names it and goes on to the next, which ends byte-exact; the sender exits 5 naming it" {
  kill_midway 3 2
  assert_equal "sender exit $status" "sender exit 5"
  node_exits 1 0
  node_exits 3 0
  grep -q "receiver 2 of 3, 127.0.0.1:$N2_PORT: lost after [0-9]* bytes forwarded to it" \
    "$T/c.err"
  grep -q "receiver 3 of 3, 127.0.0.1:$N3_PORT: wrote the $SIZE bytes" "$T/c.err"
  grep -q "^fastcat: --chain: 2 of 3 receivers have the whole stream" "$T/c.err"
  grep -q "receiver 2 bypassed: receiver 3, 127.0.0.1:$N3_PORT, goes on from byte [0-9]*" \
    "$T/N1.err"
  grep -q "^fastcat: --chain: the stream goes on from 127.0.0.1:[0-9]* at byte [0-9]*" \
    "$T/N3.err"
  assert_same_bytes "$A" "$T/N1.out"
  assert_same_bytes "$A" "$T/N3.out"
  # the lost one's file is a prefix of the stream: a --resume run completes it
  (($(stat -c %s "$T/N2.out") < SIZE))
  fc_listen R --append --out "$T/N2.out" -- --resume
  run -0 fcx "$A" /dev/null --resume 127.0.0.1 "$R_PORT"
  local rc
  wait_exit rc "$R_PID" 20
  assert_equal "resumed receiver exit $rc" "resumed receiver exit 0"
  assert_same_bytes "$A" "$T/N2.out"
}

@test "the first receiver killed: the sender bypasses it from a pipe, replaying from its ring; the two behind end byte-exact" {
  kill_midway 3 1 pipe
  assert_equal "sender exit $status" "sender exit 5"
  node_exits 2 0
  node_exits 3 0
  grep -q "receiver 1 of 3, 127.0.0.1:$N1_PORT: lost after" "$T/c.err"
  grep -q "receiver 1 bypassed: receiver 2, 127.0.0.1:$N2_PORT, goes on from byte" "$T/c.err"
  assert_same_bytes "$A" "$T/N2.out"
  assert_same_bytes "$A" "$T/N3.out"
}

@test "a receiver killed while the one behind it lags megabytes behind: its upstream replays from its ring, byte-exact" {
  fc_listen N1 -- --chain
  fc_listen N2 -- --chain
  fc_listen N3 -- --chain -I 64K
  LIST=127.0.0.1:$N1_PORT,127.0.0.1:$N2_PORT,127.0.0.1:$N3_PORT
  FIRST=$N1_PORT
  # the first MB, then the rest once receiver 3 is stopped
  ({ head -c 1000000 "$A"; until [[ -e $T/go ]]; do sleep 0.05; done; tail -c +1000001 "$A"; } |
    timeout -k 2 60 "$FASTCAT" -v --chain "$LIST" "$FIRST" >/dev/null 2>"$T/c.err") &
  local spid=$!
  wait_for_size "$T/N3.out" 900000
  kill -STOP "$N3_PID"
  touch "$T/go"
  wait_for_size "$T/N1.out" "$SIZE"
  sleep 0.5
  kill -KILL "$N2_PID"
  sleep 0.5
  kill -CONT "$N3_PID"
  status=0
  wait "$spid" || status=$?
  assert_equal "sender exit $status" "sender exit 5"
  node_exits 1 0
  node_exits 3 0
  assert_same_bytes "$A" "$T/N3.out"
  local from
  from=$(sed -n 's/.*receiver 2 bypassed: receiver 3, .*, goes on from byte \([0-9]*\)$/\1/p' \
    "$T/N1.err")
  ((from > 0 && from < SIZE - 1000000)) || fail "goes on from ${from:-nothing}: $(cat "$T/N1.err")"
}

@test "the last receiver killed: nobody behind it to reach; the others end byte-exact, the sender names it" {
  kill_midway 3 3
  assert_equal "sender exit $status" "sender exit 5"
  node_exits 1 0
  node_exits 2 0
  grep -q "receiver 3 of 3, 127.0.0.1:$N3_PORT: lost after" "$T/c.err"
  assert_same_bytes "$A" "$T/N1.out"
  assert_same_bytes "$A" "$T/N2.out"
}

@test "two receivers killed one after the other in a chain of 5: each bypassed, the other three byte-exact" {
  nodes 5
  (send file --rate-limit 4M; exit "$status") &
  local spid=$!
  wait_for_size "$T/N5.out" 1000000
  kill -KILL "$N2_PID"
  wait_for_size "$T/N5.out" 3000000
  kill -KILL "$N4_PID"
  status=0
  wait "$spid" || status=$?
  assert_equal "sender exit $status" "sender exit 5"
  for i in 1 3 5; do
    node_exits "$i" 0
    assert_same_bytes "$A" "$T/N$i.out"
  done
  grep -q "^fastcat: --chain: 3 of 5 receivers have the whole stream" "$T/c.err"
}

@test "a receiver that hangs (SIGSTOP: no FIN, no reset) is bypassed once it confirmed nothing for 15 s; the others byte-exact" {
  SIG=STOP kill_midway 3 2
  kill -KILL "$N2_PID"
  assert_equal "sender exit $status" "sender exit 5"
  node_exits 1 0
  node_exits 3 0
  assert_same_bytes "$A" "$T/N1.out"
  assert_same_bytes "$A" "$T/N3.out"
  grep -q "receiver 2, 127.0.0.1:$N2_PORT, confirmed nothing for 15 s" "$T/N1.err"
  grep -q "receiver 2 bypassed: receiver 3, 127.0.0.1:$N3_PORT, goes on from byte" "$T/N1.err"
  grep -q "sent nothing for [0-9]* s after [0-9]* bytes, and 127.0.0.1:[0-9]* reaches this receiver in its place" \
    "$T/N3.err"
  grep -q "receiver 2 of 3, 127.0.0.1:$N2_PORT: lost after [0-9]* bytes forwarded to it: Connection timed out" \
    "$T/c.err"
}

@test "a bypass goes past a receiver that cannot take over (not in the session: it came up late)" {
  nodes 4
  kill -KILL "$N3_PID"
  wait "$N3_PID" 2>/dev/null || true
  (send file --rate-limit 4M; exit "$status") &
  local spid=$!
  wait_for_size "$T/N4.out" 1000000
  # receiver 3 is back, but not in this session: a rejoin is nothing it holds
  bg_start L3 /dev/null "$T/L3.out" "$FASTCAT" -v -l --chain 127.0.0.1 "$N3_PORT"
  wait_for_line "$T/L3.err" "listening on" "$L3_PID"
  kill -KILL "$N2_PID"
  status=0
  wait "$spid" || status=$?
  assert_equal "sender exit $status" "sender exit 5"
  node_exits 1 0
  node_exits 4 0
  assert_same_bytes "$A" "$T/N1.out"
  assert_same_bytes "$A" "$T/N4.out"
  grep -q "receiver 2 bypassed: receiver 4, 127.0.0.1:$N4_PORT, goes on from byte" "$T/N1.err"
  grep -q "^fastcat: --chain: 127.0.0.1:$N3_PORT did not answer the opening" "$T/N1.err"
  grep -q "asked to go on with a session this receiver does not hold" "$T/L3.err"
  [[ ! -s $T/L3.out ]]
}

@test "a connection to a node that is not a rejoin of its session is refused, and the stream goes on" {
  nodes 2
  (send file --rate-limit 4M; exit "$status") &
  local spid=$!
  wait_for_size "$T/N2.out" 1000000
  printf 'hello\n' | timeout 5 nc.openbsd -N 127.0.0.1 "$N2_PORT" >/dev/null 2>&1 || true
  status=0
  wait "$spid" || status=$?
  assert_equal "sender exit $status" "sender exit 0"
  node_exits 2 0
  assert_same_bytes "$A" "$T/N2.out"
}

@test "the sender killed mid-transfer: every receiver exits 5 (no end mark), none exits 0" {
  nodes 2
  (cat "$A" "$A" | "$FASTCAT" --rate-limit 4M --chain "$LIST" "$FIRST" >/dev/null \
    2>"$T/c.err") 3>&- &
  local spid=$!
  fc_track "$spid"
  wait_for_size "$T/N2.out" 1000000
  pkill -KILL -P "$spid" -x fastcat
  node_exits 1 5
  node_exits 2 5
  # a FIN (its end mark missing), or a reset when confirmations were still unread there
  grep -Eq "ended without its end mark|Connection reset by peer" "$T/N1.err"
}

@test "against a plain fastcat and nc.openbsd as receivers: exit 3 before a byte moves, nothing in their output" {
  fc_listen P -- -w 2
  LIST=127.0.0.1:$P_PORT FIRST=$P_PORT
  send file -w 1
  assert_equal "sender exit $status" "sender exit 3"
  grep -q "^fastcat: --chain: 127.0.0.1:$P_PORT is not a --chain receiver" "$T/c.err"
  wait_exit rc "$P_PID" 10 || true
  [[ ! -s $T/P.out ]] || fail "the plain fastcat wrote $(stat -c %s "$T/P.out") bytes"

  nc_listen NC
  LIST=127.0.0.1:$NC_PORT FIRST=$NC_PORT
  send file
  assert_equal "sender exit $status" "sender exit 3"
  grep -q "is not a --chain receiver (it sent nothing in time)" "$T/c.err"
  [[ ! -s $T/NC.out ]] || fail "nc wrote $(stat -c %s "$T/NC.out") bytes"
}

@test "a plain fastcat sender into a --chain receiver: both exit 3, neither writes a byte" {
  nodes 1
  run -3 fcx "$A" "$T/plain.out" 127.0.0.1 "$N1_PORT"
  assert_output --partial "the peer is a fastcat --chain receiver"
  node_exits 1 3
  grep -q "^fastcat: --chain: 127.0.0.1:[0-9]* is not a --chain sender" "$T/N1.err"
  [[ ! -s $T/plain.out && ! -s $T/N1.out ]]
}

@test "a receiver on ::1, named [::1]:PORT in the list: byte-exact" {
  skip_unless_ipv6
  fc_listen N1 --addr ::1 -- --chain
  fc_listen N2 -- --chain
  LIST="[::1]:$N1_PORT,127.0.0.1:$N2_PORT" FIRST=1
  send pipe
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  node_exits 1 0
  node_exits 2 0
  assert_same_bytes "$A" "$T/N1.out"
  assert_same_bytes "$A" "$T/N2.out"
}
