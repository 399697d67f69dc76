#!/usr/bin/env bats
# retry-wan.bats - --retry through a 3 s blackout in the WAN lab (tests/wanlab.bash): an
# nftables rule drops every packet arriving at either host for 3 s. The sender (-w 1) gives
# the silent connection up and reconnects with its doubling wait until the link is back; the
# receiver (-l -k --resume, no -w) still holds the old, silent connection, and gives way to
# the new one once it has been silent for 1 s. From a file and from a pipe; byte-exact, exit
# 0, at least one retry. The blackout starts once the receiver's file has grown, not at a time.
# Then -P auto --retry over a 100 ms path where -P auto grows: one of its connections reset
# (ss -K); the whole striped session reconnects, starts with one connection and grows again.

load helpers
load wanlab

setup() { wanlab_test_setup; }
teardown() { wanlab_test_teardown; }

SIZE=8000000 # 4 s at 2 MB/s
RATE=2M

# blackout on|off: drop (or stop dropping) all input on both hosts.
blackout() {
  local ns
  for ns in "$WL_A" "$WL_B"; do
    if [[ $1 == on ]]; then
      ip netns exec "$ns" nft -f - <<'EOF' || return 1
table inet fcblackout {
  chain input { type filter hook input priority 0; policy drop; }
}
EOF
    else
      ip netns exec "$ns" nft delete table inet fcblackout || return 1
    fi
  done
}

# lab_receiver [fastcat options...]: -v -l -k --resume on host B, stdout appended to $T/file
# (emptied first), stderr $T/L.err. Sets L_PID and L_PORT.
lab_receiver() {
  : >"$T/file"
  ip netns exec "$WL_B" "$FASTCAT" -v -l -k --resume "$@" "$WL_B_IP" 0 >>"$T/file" \
    2>"$T/L.err" </dev/null 3>&- &
  L_PID=$!
  fc_track "$L_PID"
  wait_for_line "$T/L.err" 'listening on .*:([0-9]+)$' "$L_PID"
  L_PORT=$(sed -nE 's/.*listening on .*:([0-9]+)$/\1/p' "$T/L.err" | head -n 1)
}

# lab_sender FEED SECS [fastcat options...]: in the background, $T/a from host A to the
# receiver, from the file or through a pipe (FEED file or pipe), -v --report=json into
# $T/c.err; its exit status goes to $T/c.rc. Sets C_PID.
lab_sender() {
  local feed=$1 secs=$2
  shift 2
  (
    rc=0
    if [[ $feed == pipe ]]; then
      cat "$T/a" | ip netns exec "$WL_A" timeout -k 2 "$secs" "$FASTCAT" -v --report=json \
        "$@" "$WL_B_IP" "$L_PORT" >/dev/null 2>"$T/c.err" || rc=$?
    else
      ip netns exec "$WL_A" timeout -k 2 "$secs" "$FASTCAT" -v --report=json "$@" \
        "$WL_B_IP" "$L_PORT" <"$T/a" >/dev/null 2>"$T/c.err" || rc=$?
    fi
    echo "$rc" >"$T/c.rc"
  ) 3>&- &
  C_PID=$!
  fc_track "$C_PID"
}

# sender_ok: the sender exits 0 within 120 s, and host B's file is $T/a. Sets CJSON.
sender_ok() {
  local rc
  wait_exit rc "$C_PID" 120
  [[ -s $T/c.rc && $(cat "$T/c.rc") == 0 ]] ||
    fail "sender exit $(cat "$T/c.rc" 2>/dev/null): $(cat "$T/c.err")"
  assert_same_bytes "$T/a" "$T/file"
  CJSON=$(json_report "$T/c.err")
}

# through_blackout FEED: file or pipe.
through_blackout() {
  wanlab_up "$LAB" --rate 100mbit --delay-ms 5
  mkpayload "$T/a" "$SIZE"
  lab_receiver
  lab_sender "$1" 60 -w 1 --retry 10 --rate-limit "$RATE"
  wait_for_size "$T/file" 2000000 20
  blackout on
  sleep 3 # the blackout itself: its length is what is tested
  blackout off
  sender_ok
  jq_true "$CJSON" '.retries >= 1'
  jq_is "$CJSON" .confirmed "$SIZE"
  grep -q 'resumed session' "$T/L.err" || fail "the receiver resumed nothing: $(cat "$T/L.err")"
}

@test "--retry from a file through a 3 s blackout: byte-exact, exit 0, retried" {
  through_blackout file
}

@test "--retry from a pipe through a 3 s blackout: byte-exact, exit 0, retried" {
  through_blackout pipe
}

# auto_through_loss FEED: -P auto --retry 3 from a file or a pipe over 1 Gbit/s, 2 x 50 ms,
# where one connection's window does not fill the path and -P auto grows; once the first
# step's connections (4 or more) are in, ss -K resets one of them at the sender.
auto_through_loss() {
  local sport n
  wanlab_up "$LAB" --rate 1gbit --delay-ms 50 --mtu 9000
  mkpayload "$T/a" $((192 * 1024 * 1024 + 7))
  lab_receiver -P 1
  lab_sender "$1" 120 -P auto --retry 3
  # the loss comes once the first step's connections are in
  wait_for_line "$T/c.err" '^fastcat: -P auto: ([4-9]|1[0-6]) connections$' "$C_PID"
  n=$(ip netns exec "$WL_A" ss -Htn state established "( dport = :$L_PORT )" | wc -l)
  ((n >= 4)) || fail "only $n connections when the loss was due: $(cat "$T/c.err")"
  sport=$(ip netns exec "$WL_A" ss -Htn state established "( dport = :$L_PORT )" |
    awk 'NR == 3 { n = split($3, a, ":"); print a[n] }')
  ip netns exec "$WL_A" ss -K state established "( sport = :$sport )" >/dev/null 2>&1 || true
  sender_ok
  striped_retry_once $((192 * 1024 * 1024 + 7)) '[0-9]+ of [0-9]+'
  # the new striped session starts with one connection and grows again
  (($(grep -Ec '^fastcat: -P auto: 1 -> ([4-9]|1[0-6]) connections' "$T/c.err") == 2)) ||
    fail "the reconnected session did not grow: $(cat "$T/c.err")"
}

@test "-P auto --retry 3 from a file over a 100 ms lab, a grown connection lost (ss -K): the session reconnects and grows again, byte-exact, exit 0" {
  need ss
  auto_through_loss file
}

@test "-P auto --retry 3 from a pipe over a 100 ms lab, a grown connection lost (ss -K): resent from the replay buffer, grows again, byte-exact, exit 0" {
  need ss
  auto_through_loss pipe
}
