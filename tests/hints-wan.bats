#!/usr/bin/env bats
# hints-wan.bats - -v's hint at exit names what held a transfer back, each in a WAN lab
# (tests/wanlab.bash) set up to cause it: the send buffer (tcp_wmem capped at the sender), the
# peer's receive window (tcp_rmem capped at the receiver, or -I there), loss (a lossy link) and
# the source (pv -L into the sender). Each test asserts one hint line, naming that limit and no
# other. Behaviour, not speed: small transfers over 2 x 20 ms (2 x 5 ms for loss).
#
# Why the send buffer test feeds a pipe: from a regular file fastcat uses sendfile, and then
# the kernel let the socket queue ten times SO_SNDBUF (ss: w2630088 with tb262144), so the
# buffer did not bound it; the bursts overflowed the lab's tun ring (tun_net_xmit FULL_RING,
# "TX dropped" on A's wan0) and came back as retransmits. That was the 14 % of -O 128k
# (doc/HACKING.md, the network labs).

load helpers
load wanlab

setup() { wanlab_test_setup; }
teardown() { wanlab_test_teardown; }

# hint_lab LAB-OPTS -- A-SYSCTLS -- B-SYSCTLS -- LISTENER-OPTS -- SENDER-OPTS -- SIZE [FEED]:
# SIZE bytes from host A to a fastcat -v listener on host B, through `FEED` (a shell command
# reading the payload on stdin, e.g. cat or pv) when given, else from the file. Both ends exit
# 0 and B's output is the payload. HINTS holds the sender's hint lines, TCPLINE its "tcp:" line.
hint_lab() {
  local lab=() asys=() bsys=() lopts=() sopts=() s size feed rc
  while [[ $1 != -- ]]; do lab+=("$1"); shift; done; shift
  while [[ $1 != -- ]]; do asys+=("$1"); shift; done; shift
  while [[ $1 != -- ]]; do bsys+=("$1"); shift; done; shift
  while [[ $1 != -- ]]; do lopts+=("$1"); shift; done; shift
  while [[ $1 != -- ]]; do sopts+=("$1"); shift; done; shift
  size=$1 feed=${2:-}
  wanlab_up "$LAB" "${lab[@]}"
  for s in "${asys[@]}"; do wanlab_a sysctl -qw "$s"; done
  for s in "${bsys[@]}"; do wanlab_b sysctl -qw "$s"; done
  mkpayload "$T/a" "$size"
  FC_PREFIX=(ip netns exec "$WL_B")
  fc_listen L --addr "$WL_B_IP" --out "$T/L.out" "${lopts[@]}"
  FC_PREFIX=()
  if [[ -n $feed ]]; then
    run -0 --separate-stderr timeout -k 5 60 bash -c "$feed | ip netns exec \"\$1\" \"\$2\" \
      --report -v \"\${@:5}\" \"\$3\" \"\$4\"" _ "$WL_A" "$FASTCAT" "$WL_B_IP" "$L_PORT" \
      "${sopts[@]}" <"$T/a"
  else
    run -0 --separate-stderr timeout -k 5 60 ip netns exec "$WL_A" "$FASTCAT" --report -v \
      "${sopts[@]}" "$WL_B_IP" "$L_PORT" <"$T/a"
  fi
  printf '%s\n' "$stderr" >"$T/c.err"
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$T/a" "$T/L.out"
  HINTS=$(grep '^fastcat: hint: ' "$T/c.err" || true)
  TCPLINE=$(grep '^fastcat: tcp: ' "$T/c.err" || true)
}

# one_hint WORDS: exactly one hint line, and it contains WORDS.
one_hint() {
  local n
  n=$(grep -c '^fastcat: hint: ' "$T/c.err" || true)
  assert_equal "hint lines: $n" "hint lines: 1"
  [[ $HINTS == *"$1"* ]] || fail "want a hint with '$1'; got '$HINTS'; $TCPLINE"
}

# 256 KiB per 40 ms is 52 Mbit/s; the link's 70 Mbit/s leaves the buffer the limit, and keeps
# a slow start that queued past SO_SNDBUF (seen: 1.5 MiB in flight with tb 256 KiB, on 1 in 4
# runs at 1 Gbit/s) under 1.5 buffers per RTT, where it would look like the path's own rate.
@test "send buffer: tcp_wmem capped at 256 KiB at the sender, 70 Mbit/s over 2 x 20 ms: the send buffer, tcp_wmem, -P" {
  hint_lab --rate 70mbit --delay-ms 20 -- 'net.ipv4.tcp_wmem=4096 16384 262144' -- -- -- -- \
    $((16 * 1024 * 1024)) cat
  one_hint "the send buffer held the connection back"
  [[ $HINTS == *"net.ipv4.tcp_wmem (now 4096 16384 262144)"* && $HINTS =~ "try -P "[0-9]+" (-P auto's step at this rate)" ]] ||
    fail "the hint does not name tcp_wmem and -P auto's first step: '$HINTS'"
}

@test "receive window: tcp_rmem capped at 256 KiB at the receiver, over 2 x 20 ms: the peer's window, tcp_rmem, -I" {
  hint_lab --rate 1gbit --delay-ms 20 -- -- 'net.ipv4.tcp_rmem=4096 65536 262144' -- -- -- \
    $((8 * 1024 * 1024))
  one_hint "the peer's receive window held the connection back"
  [[ $HINTS == *"tcp_rmem at the peer"* && $HINTS == *"-I"* ]] ||
    fail "the hint does not name tcp_rmem at the peer and -I: '$HINTS'"
}

@test "receive window: -I 128k at the receiver, over 2 x 20 ms: the peer's window" {
  hint_lab --rate 1gbit --delay-ms 20 -- -- -- -I 128k -- -- $((4 * 1024 * 1024))
  one_hint "the peer's receive window held the connection back"
}

@test "loss: 2 % each way over 2 x 5 ms: the segments sent again, and -P" {
  hint_lab --rate 1gbit --delay-ms 5 --loss 0.02 -- -- -- -- -- $((4 * 1024 * 1024))
  one_hint "segments sent again"
  [[ $HINTS == *"loss kept the congestion window"* && $HINTS == *"try -P"* ]] ||
    fail "the hint does not blame loss and name -P: '$HINTS'"
}

@test "source: pv -L 2m into the sender, over 2 x 20 ms (data in flight most of the time): the source" {
  need pv
  hint_lab --rate 1gbit --delay-ms 20 -- -- -- -- -- $((4 * 1024 * 1024)) 'pv -qL 2m'
  one_hint "the source (stdin) was slower than the network, so the pipe was not the bottleneck"
}
