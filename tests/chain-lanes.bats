#!/usr/bin/env bats
# chain-lanes.bats - --chain with -P N at the sender: every hop is N connections, the stream cut
# into 256 KiB pieces dealt out in turn; each node takes the sender's count without being told.
# Byte-exact through a chain, N connections at each hop (strace), and a receiver killed with
# every hop striped: bypassed, the new hop striped too.

load helpers
load chain

# connects FILE PORT: the connect() calls to PORT in an strace -f log.
connects() {
  grep -c "connect(.*sin_port=htons($2)" "$1"
}

@test "-P 4 through a chain of 3 from a pipe: byte-exact at every node, everyone exits 0" {
  CHAIN_OPTS="-P 4" whole_chain 3 pipe
  grep -q "^fastcat: --chain: 4 connections from 127.0.0.1:" "$T/N1.err"
  grep -q "^fastcat: --chain: 4 connections from 127.0.0.1:" "$T/N3.err"
}

@test "-P 3 through a chain of 2: the sender opens 3 connections to the first node, which takes 3 and opens 3 to the next" {
  command -v strace >/dev/null || skip "strace not installed"
  fc_listen N2 -- --chain
  FC_PREFIX=("${STRACE[@]}" -f -o "$T/n1.strace" -e trace=connect,accept,accept4)
  fc_listen N1 -- --chain
  FC_PREFIX=()
  LIST=127.0.0.1:$N1_PORT,127.0.0.1:$N2_PORT FIRST=$N1_PORT
  status=0
  "${STRACE[@]}" -f -o "$T/c.strace" -e trace=connect "$FASTCAT" -P 3 --chain "$LIST" 9 \
    <"$A" >/dev/null 2>"$T/c.err" || status=$?
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  node_exits 2 0
  local rc
  wait_exit rc "$N1_PID" 20
  assert_equal "sender: $(connects "$T/c.strace" "$N1_PORT") to receiver 1" \
    "sender: 3 to receiver 1"
  assert_equal "receiver 1: $(connects "$T/n1.strace" "$N2_PORT") to receiver 2" \
    "receiver 1: 3 to receiver 2"
  assert_equal "receiver 1: $(grep -c '^[0-9]* *accept4\?(.* = [0-9]' "$T/n1.strace") taken" \
    "receiver 1: 3 taken"
  assert_same_bytes "$A" "$T/N1.out"
  assert_same_bytes "$A" "$T/N2.out"
}

@test "-P 4: a receiver killed mid-transfer is bypassed over 4 new connections; the others byte-exact, the sender exits 5 naming it" {
  CHAIN_OPTS="-P 4" kill_midway 3 2
  assert_equal "sender exit $status" "sender exit 5"
  node_exits 1 0
  node_exits 3 0
  grep -q "receiver 2 of 3, 127.0.0.1:$N2_PORT: lost after [0-9]* bytes forwarded to it" \
    "$T/c.err"
  grep -q "receiver 2 bypassed: receiver 3, 127.0.0.1:$N3_PORT, goes on from byte [0-9]*" \
    "$T/N1.err"
  grep -q "^fastcat: --chain: the stream goes on from 127.0.0.1:[0-9]* at byte [0-9]*" \
    "$T/N3.err"
  # once from receiver 2 at the start, once more from receiver 1 after the bypass
  assert_equal "$(grep -c "^fastcat: --chain: 4 connections from 127.0.0.1:" "$T/N3.err")" 2
  assert_same_bytes "$A" "$T/N1.out"
  assert_same_bytes "$A" "$T/N3.out"
}

@test "-P 3: the first receiver killed while the sender reads a pipe: bypassed from the sender's ring, the two behind byte-exact" {
  CHAIN_OPTS="-P 3" kill_midway 3 1 pipe
  assert_equal "sender exit $status" "sender exit 5"
  node_exits 2 0
  node_exits 3 0
  grep -q "receiver 1 bypassed: receiver 2, 127.0.0.1:$N2_PORT, goes on from byte" "$T/c.err"
  assert_same_bytes "$A" "$T/N2.out"
  assert_same_bytes "$A" "$T/N3.out"
}

@test "-P 2: a receiver that hangs (SIGSTOP) is bypassed after 15 s of silence; the one behind takes the new connections, byte-exact" {
  CHAIN_OPTS="-P 2" SIG=STOP kill_midway 3 2
  kill -KILL "$N2_PID"
  assert_equal "sender exit $status" "sender exit 5"
  node_exits 1 0
  node_exits 3 0
  grep -q "receiver 2, 127.0.0.1:$N2_PORT, confirmed nothing for 15 s" "$T/N1.err"
  grep -q "receiver 2 bypassed: receiver 3, 127.0.0.1:$N3_PORT, goes on from byte" "$T/N1.err"
  assert_equal "$(grep -c "^fastcat: --chain: 2 connections from 127.0.0.1:" "$T/N3.err")" 2
  assert_same_bytes "$A" "$T/N1.out"
  assert_same_bytes "$A" "$T/N3.out"
}

@test "-P auto on loopback: each hop's round trip is far under what one connection fills, so one connection a hop, each upstream saying why; byte-exact" {
  CHAIN_OPTS="-P auto" whole_chain 3 file
  grep -q "^fastcat: --chain: -P auto: 1 connection to receiver 1: at a [0-9.e-]* ms round trip" \
    "$T/c.err"
  grep -q "^fastcat: --chain: -P auto: 1 connection to receiver 3: at a" "$T/N2.err"
  ! grep -q "connections from" "$T/N1.err" "$T/N2.err" "$T/N3.err"
}
