#!/usr/bin/env bats
# parallel-wan.bats - -P and the TCP figures over the WAN lab (tests/wanlab.bash): byte-exact
# over a lossy, reordering link, and the measured RTT is the lab's (the -v hints, each in a lab
# set up to cause it, are tests/hints-wan.bats'). Behaviour, not speed: speed is
# contrib/bench/wan.sh's.

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
  # 4 MiB of send buffer carry at most 335 Mbit/s over 100 ms: 6 carry 2 Gbit/s, opened at once
  grep -Eq '^fastcat: -P auto: 1 -> [67] connections at once: at a 10[0-9] ms round trip a 4.0 MiB send buffer carries 3[0-9]{2} Mbit/s at most$' "$T/c.err" ||
    fail "no growth line: $(cat "$T/c.err")"
}

# 256 KiB of send buffer per 20 ms carries about 100 Mbit/s: one connection is held back by
# its window on a 500 Mbit/s path whose round trip is short, where the old relative rule read
# the window's bursts as a full queue.
@test "-P auto over a 20 ms lab where one window is too small: grows past one connection, the hint names its decision" {
  mkpayload "$T/a" $((48 * 1024 * 1024 + 1))
  wanlab_up "$LAB" --rate 500mbit --delay-ms 10
  wanlab_a sysctl -qw net.ipv4.tcp_wmem='4096 16384 262144'
  lab_xfer "$T/a" 90 -P auto -- -v -P auto
  local n
  n=$(jq -r '.streams | length' <<<"$CJSON")
  ((n >= 4)) || fail "-P auto ended with $n connections: $(cat "$T/c.err")"
  # 256 KiB over 20 ms carry at most 105 Mbit/s: the step at once goes to the most, 16
  grep -Eq '^fastcat: -P auto: 1 -> 16 connections at once: at a 2[0-9] ms round trip a 0.2 MiB send buffer carries' "$T/c.err" ||
    fail "no first step: $(cat "$T/c.err")"
  # 16 connections of at most 256 KiB in flight each fill the 500 Mbit/s link's queue: each
  # is held back by its buffer or loses packets, and the hint that names it speaks of -P auto
  grep -q '^fastcat: hint: ' "$T/c.err" || fail "no hint: $(cat "$T/c.err")"
  # on a loaded machine (CI) the sender itself may be starved half the time: then the hint
  # rightly names the source, which it measured, and -P auto's decision is not the story
  grep -Eq '^fastcat: hint: .*; -P auto (settled at|had grown to) [0-9]+ connection' "$T/c.err" ||
    grep -Eq '^fastcat: hint: the connection had data to send only [0-9]+ % of the .*: the source \(stdin\) was slower than the network' "$T/c.err" ||
    fail "the hint does not speak of what -P auto decided: $(grep '^fastcat: hint' "$T/c.err")"
  ! grep -Eq '^fastcat: hint: .*try -P' "$T/c.err" || fail "the hint suggests another -P"
}

@test "-P auto over a 2 ms lab that one connection fills: keeps one connection" {
  mkpayload "$T/a" $((96 * 1024 * 1024))
  wanlab_up "$LAB" --rate 500mbit --delay-ms 1
  lab_xfer "$T/a" 90 -P auto -- -v -P auto
  jq_true "$CJSON" '(.streams | length) == 1' ||
    fail "-P auto grew on a 2 ms path: $(grep -- '-P auto' "$T/c.err")"
  ! grep -Eq '^fastcat: -P auto: 1 -> ' "$T/c.err" || fail "a growth line: $(cat "$T/c.err")"
}

@test "TCP_INFO over a 2 x 25 ms lab: the sender's min RTT is within 20 % of 50 ms" {
  mkpayload "$T/a" $((4 * 1024 * 1024))
  wanlab_up "$LAB" --rate 1gbit --delay-ms 25
  lab_xfer "$T/a" 60 --
  jq_true "$CJSON" '.tcp.min_rtt_ms >= 40 and .tcp.min_rtt_ms <= 60'
  jq_true "$CJSON" '.tcp.rtt_ms >= 40'
}
