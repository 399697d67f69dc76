#!/usr/bin/env bats
# reliable-wan.bats - --reliable over the WAN lab (tests/wanlab.bash): byte-exact at 0, 1 and
# 5 % loss each way, with jitter that reorders; datagrams sized to the lab's MTU (no
# fragments), the lab's round trip measured. Behaviour, not speed: speed is
# contrib/bench/reliable.sh's.

load helpers
load wanlab

setup() { wanlab_test_setup; }
teardown() { wanlab_test_teardown; }

# rl_lab_xfer IN SECS ADDR [sender opts]: IN from host A to a --reliable receiver on host B at
# ADDR; both exit 0, B's output is IN. Sets CJSON and LJSON.
rl_lab_xfer() {
  local in=$1 secs=$2 addr=$3 rc
  shift 3
  FC_PREFIX=(ip netns exec "$WL_B")
  fc_listen L --addr "$addr" --out "$T/L.out" -u --reliable --report=json
  FC_PREFIX=()
  run -0 --separate-stderr timeout -k 5 "$secs" ip netns exec "$WL_A" "$FASTCAT" \
    -u --reliable --report=json "$@" "$addr" "$L_PORT" <"$in"
  printf '%s\n' "$stderr" >"$T/c.err"
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$in" "$T/L.out"
  CJSON=$(json_report "$T/c.err")
  LJSON=$(json_report "$T/L.err")
}

@test "reliable over the lab, no loss, IPv6: byte-exact; datagrams fit the MTU of 1500; the round trip is the lab's" {
  mkpayload "$T/a" $((16 * 1024 * 1024 + 9))
  wanlab_up "$LAB" --rate 1gbit --delay-ms 10
  rl_lab_xfer "$T/a" 60 "$WL_B_IP6"
  jq_is "$CJSON" .verified true
  # 1500 - 40 (IPv6) - 8 (UDP) - 32 (header)
  jq_is "$CJSON" .reliable.payload 1420
  jq_true "$CJSON" '.reliable.min_rtt_ms >= 19.5 and .reliable.min_rtt_ms < 30'
}

@test "reliable over the lab at 1 % loss with reordering jitter: byte-exact, the losses repaired" {
  mkpayload "$T/a" $((16 * 1024 * 1024 + 3))
  wanlab_up "$LAB" --rate 1gbit --delay-ms 10 --loss 0.01 --jitter-ms 2 --reorder
  rl_lab_xfer "$T/a" 60 "$WL_B_IP"
  jq_is "$CJSON" .reliable.payload 1440
  jq_true "$CJSON" '.reliable.resent > 0 and .reliable.gap_acks > 0'
  jq_is "$LJSON" .verified true
}

@test "reliable over the lab at 5 % loss each way: byte-exact" {
  mkpayload "$T/a" $((8 * 1024 * 1024 + 1))
  wanlab_up "$LAB" --rate 1gbit --delay-ms 10 --loss 0.05 --jitter-ms 1 --reorder
  rl_lab_xfer "$T/a" 90 "$WL_B_IP"
  jq_true "$CJSON" '.reliable.resent >= 100'
  jq_is "$CJSON" .verified true
}
