#!/usr/bin/env bats
# chain-wan.bats - --chain -P auto over the WAN lab (tests/wanlab.bash): each upstream picks its
# own hop's connections from the round trip its handshake told. Host A sends; receiver 1 listens
# on host B across the lab's long link, receiver 2 on host B's loopback behind it. Behaviour,
# not speed: speed is contrib/bench/chain-wan.sh's.

load helpers
load wanlab

setup() { wanlab_test_setup; }
teardown() { wanlab_test_teardown; }

@test "--chain -P auto over a 100 ms lab: 6 connections on the long hop, 1 on the local one behind it; byte-exact at both receivers" {
  mkpayload "$T/a" $((8 * 1024 * 1024 + 7))
  wanlab_up "$LAB" --rate 1gbit --delay-ms 50
  FC_PREFIX=(ip netns exec "$WL_B")
  fc_listen N2 --addr 127.0.0.1 --out "$T/N2.out" -- --chain
  fc_listen N1 --addr "$WL_B_IP" --out "$T/N1.out" -- --chain
  FC_PREFIX=()
  run -0 --separate-stderr timeout -k 5 90 ip netns exec "$WL_A" "$FASTCAT" -v -P auto \
    --chain "$WL_B_IP:$N1_PORT,127.0.0.1:$N2_PORT" 9 <"$T/a"
  printf '%s\n' "$stderr" >"$T/c.err"
  local rc
  wait_exit rc "$N1_PID" 30
  assert_equal "receiver 1 exit $rc" "receiver 1 exit 0"
  wait_exit rc "$N2_PID" 30
  assert_equal "receiver 2 exit $rc" "receiver 2 exit 0"
  assert_same_bytes "$T/a" "$T/N1.out"
  assert_same_bytes "$T/a" "$T/N2.out"
  # 4 MiB of send buffer carry at most 335 Mbit/s over 100 ms: 6 carry 2 Gbit/s
  grep -Eq '^fastcat: --chain: -P auto: [67] connections to receiver 1: at a 10[0-9.]* ms round trip a 4.0 MiB send buffer carries 3[0-9]{2} Mbit/s at most$' "$T/c.err" ||
    fail "no count for the long hop: $(cat "$T/c.err")"
  grep -Eq '^fastcat: --chain: [67] connections from ' "$T/N1.err" ||
    fail "receiver 1 took: $(cat "$T/N1.err")"
  grep -q '^fastcat: --chain: -P auto: 1 connection to receiver 2: at a' "$T/N1.err" ||
    fail "no count for the local hop: $(cat "$T/N1.err")"
}
