#!/usr/bin/env bats
# parallel-wan.bats - -P and the TCP figures over the WAN lab (tests/wanlab.bash): byte-exact
# over a lossy, reordering link, the measured RTT is the lab's, and the -v hint names what a lab
# set up to cause it held back. Behaviour, not speed: speed is contrib/bench/wan.sh's.

load helpers
load wanlab

setup() { wanlab_test_setup; }
teardown() { wanlab_test_teardown; }

# lab_xfer IN SECS LISTENER-OPTS -- SENDER-OPTS: IN from host A to a fastcat listener on host
# B; both must exit 0 and B's output be IN. Sets CJSON and LJSON (both ends --report=json).
lab_xfer() {
  local in=$1 secs=$2 lopts=() rc
  shift 2
  while (($#)) && [[ $1 != -- ]]; do lopts+=("$1"); shift; done
  shift
  FC_PREFIX=(ip netns exec "$WL_B")
  fc_listen L --addr "$WL_B_IP" --out "$T/L.out" --report=json "${lopts[@]}"
  FC_PREFIX=()
  run -0 --separate-stderr timeout -k 5 "$secs" ip netns exec "$WL_A" "$FASTCAT" \
    --report=json "$@" "$WL_B_IP" "$L_PORT" <"$in"
  printf '%s\n' "$stderr" >"$T/c.err"
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$in" "$T/L.out"
  CJSON=$(json_report "$T/c.err")
  LJSON=$(json_report "$T/L.err")
}

@test "-P 2 and -P 8 over a lab with 1 % loss and reordering: byte-exact, exit 0 at both ends" {
  mkpayload "$T/a" $((8 * 1024 * 1024 + 3))
  wanlab_up "$LAB" --rate 1gbit --delay-ms 5 --loss 0.01 --jitter-ms 2 --reorder
  lab_xfer "$T/a" 60 -P 1 -- -P 2
  jq_is "$LJSON" .received.bytes $((8 * 1024 * 1024 + 3))
  rm -f "$T/L.out"
  lab_xfer "$T/a" 60 -P 1 -- -P 8 --verify
  jq_is "$CJSON" .verified true
  jq_true "$CJSON" '(.streams | length) == 8'
}

@test "-P auto over a 100 ms lab: connections join mid-session (both ends count the same), byte-exact, --verify" {
  mkpayload "$T/a" $((48 * 1024 * 1024 + 5))
  wanlab_up "$LAB" --rate 1gbit --delay-ms 50 --mtu 9000
  lab_xfer "$T/a" 90 -v -P auto -- -v -P auto --verify
  jq_is "$CJSON" .verified true
  local n
  n=$(jq -r '.streams | length' <<<"$CJSON")
  ((n >= 2 && n <= 16)) || fail "-P auto ended with $n connections: $(cat "$T/c.err")"
  jq_is "$LJSON" '.streams | length' "$n"
  grep -Eq '^fastcat: -P auto: 1 -> 2 connections at [0-9]+ Mbit/s$' "$T/c.err" ||
    fail "no growth line: $(cat "$T/c.err")"
}

@test "TCP_INFO over a 2 x 25 ms lab: the sender's min RTT is within 20 % of 50 ms" {
  mkpayload "$T/a" $((4 * 1024 * 1024))
  wanlab_up "$LAB" --rate 1gbit --delay-ms 25
  lab_xfer "$T/a" 60 --
  jq_true "$CJSON" '.tcp.min_rtt_ms >= 40 and .tcp.min_rtt_ms <= 60'
  jq_true "$CJSON" '.tcp.rtt_ms >= 40'
}

# hint_in_lab LAB-OPTS -- LISTENER-OPTS -- SENDER-OPTS: 6 MiB across, the sender's -v hint in HINT.
hint_in_lab() {
  local lab=()
  while (($#)) && [[ $1 != -- ]]; do lab+=("$1"); shift; done
  shift
  mkpayload "$T/a" $((6 * 1024 * 1024))
  wanlab_up "$LAB" "${lab[@]}"
  lab_xfer "$T/a" 90 "$@" -v
  HINT=$(grep '^fastcat: hint: ' "$T/c.err" || true)
}

# The send-buffer hint is only unit-tested (tests/unit/test-hint.c): over this lab, -O 128k
# (SO_SNDBUF 256 KiB) ran at 112 Mbit/s with 14 % of its segments sent again and
# sndbuf_limited 0, which is not yet understood.

@test "-v hint, a small receive window at the peer over 100 ms (-I 128k there): names the receive window" {
  hint_in_lab --rate 1gbit --delay-ms 50 -- -I 128k --
  [[ $HINT == *"receive window"* ]] || fail "hint: '$HINT'; $(grep 'tcp:' "$T/c.err")"
}

@test "-v hint, 2 % loss: names the segments sent again, and -P" {
  hint_in_lab --rate 1gbit --delay-ms 5 --loss 0.02 -- --
  [[ $HINT == *"sent again"* && $HINT == *"-P"* ]] || fail "hint: '$HINT'"
}
