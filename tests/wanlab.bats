#!/usr/bin/env bats
# wanlab.bats - the WAN lab itself (tests/wanlab.bash): it comes up and goes down without a
# trace, its delay, loss and rate are what it was asked for (loosely: behaviour, not timing),
# and fastcat crosses a lossy, reordering link byte-exact. Each test has its own lab; the
# file takes about 20 s.

load helpers
load wanlab

setup() { wanlab_test_setup; }
teardown() { wanlab_test_teardown; }

needs_ping() { command -v ping >/dev/null || skip "needs ping (apt-get install iputils-ping)"; }

# ping_field OUTPUT: "transmitted received avg_ms" from ping -q's summary.
ping_field() {
  awk '/packets transmitted/ { t = $1; r = $4 }
       /^rtt / { split($4, v, "/"); a = v[2] }
       END { print t, r, a }' <<<"$1"
}

# line_count DIR FIELD: a number from the delay line's counts for DIR (A->B or B->A), e.g.
# line_count A-\>B lost.
line_count() { wanlab_stats | awk -v d="$1:" -v f="$2" '$1 == d { for (i = 2; i < NF; i++) if ($(i + 1) ~ "^" f) { gsub(/[^0-9]/, "", $i); print $i } }'; }

# fc_over_lab IN OUT SECS: fastcat from host A to a fastcat listener on host B, IN to OUT;
# sets MS to the wall time from the client's start to the listener's exit.
fc_over_lab() {
  local start rc
  # shellcheck disable=SC2034 # fc_listen reads it
  FC_PREFIX=(ip netns exec "$WL_B")
  fc_listen L --addr "$WL_B_IP" --out "$2"
  start=$(now_us)
  run -0 --separate-stderr timeout -k 5 "$3" ip netns exec "$WL_A" "$FASTCAT" "$WL_B_IP" "$L_PORT" <"$1"
  wait_exit rc "$L_PID" 20
  MS=$(elapsed_ms "$start")
  assert_equal "listener exit $rc" "listener exit 0"
}

@test "the lab comes up (two hosts, no route out, Debian's TCP defaults) and goes down leaving nothing behind" {
  needs_ping
  local before pid name f
  before=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
  wanlab_up "$LAB" --delay-ms 1
  name=$WL_NAME pid=${WL_DELAYLINE_PID:-}
  [[ -e /run/netns/$WL_A && -e /run/netns/$WL_B ]]
  run -0 wanlab_a ping -c 1 -W 2 "$WL_B_IP"
  run -0 wanlab_b ping -c 1 -W 2 "$WL_A_IP6"
  # nothing but the lab's own prefixes is reachable
  run ! wanlab_a ip route get 203.0.113.1
  run ! wanlab_b ip -6 route get 2001:db8:ffff::1
  assert_equal "$(wanlab_a sysctl -n net.ipv4.tcp_rmem)" "$(printf '4096\t131072\t6291456')"
  assert_equal "$(wanlab_b sysctl -n net.ipv4.tcp_wmem)" "$(printf '4096\t16384\t4194304')"
  assert_equal "$(wanlab_b sysctl -n net.ipv4.tcp_congestion_control)" "$WL_CC"
  if grep -qw cubic /proc/sys/net/ipv4/tcp_available_congestion_control; then
    assert_equal "congestion control $WL_CC" "congestion control cubic"
  fi
  # the host's allowed list was put back at once, not at wanlab_down
  assert_equal "$(sysctl -n net.ipv4.tcp_allowed_congestion_control)" "$before"
  wanlab_down
  wanlab_down  # idempotent
  [[ ! -e /run/netns/${name}a && ! -e /run/netns/${name}b ]] || fail "a namespace is left: $(ip netns list)"
  [[ ! -e $WL_RUN/$name ]] || fail "$WL_RUN/$name is left"
  if [[ -n $pid ]] && _wanlab_alive "$pid"; then fail "the delay line (pid $pid) still runs"; fi
  for f in /proc/[0-9]*/cmdline; do
    [[ $({ tr '\0' ' ' <"$f"; } 2>/dev/null) != *"${name}a ${name}b"* ]] || fail "left running: $f"
  done
  assert_equal "$(sysctl -n net.ipv4.tcp_allowed_congestion_control)" "$before"
}

@test "ping over a 2 x 50 ms lab: the round trip is within 20 % of 100 ms, IPv4 and IPv6" {
  needs_ping
  local f
  wanlab_up "$LAB" --delay-ms 50
  run -0 wanlab_a ping -c 20 -i 0.05 -q "$WL_B_IP"
  read -r -a f <<<"$(ping_field "$output")"
  assert_equal "received ${f[1]}" "received 20"
  awk -v a="${f[2]}" 'BEGIN { exit !(a >= 80 && a <= 120) }' || fail "IPv4 rtt avg ${f[2]} ms"
  run -0 wanlab_b ping -c 10 -i 0.05 -q "$WL_A_IP6"
  read -r -a f <<<"$(ping_field "$output")"
  awk -v a="${f[2]}" 'BEGIN { exit !(a >= 80 && a <= 120) }' || fail "IPv6 rtt avg ${f[2]} ms"
}

@test "a 1 % loss lab drops about 1 % each way: 2000 pings lose 0.6-6 % of their round trips" {
  needs_ping
  local f lost pct d n in
  wanlab_up "$LAB" --delay-ms 1 --loss 0.01
  run wanlab_a ping -c 2000 -i 0.002 -W 1 -q "$WL_B_IP"
  read -r -a f <<<"$(ping_field "$output")"
  assert_equal "transmitted ${f[0]}" "transmitted 2000"
  lost=$((f[0] - f[1]))
  # a round trip survives with 0.99^2: 1.99 % lost, ~40 of 2000 (sd ~6)
  ((lost >= 12 && lost <= 120)) || fail "$lost of 2000 round trips lost: $output"
  if [[ $WL_IMPL == delayline ]]; then
    for d in 'A->B' 'B->A'; do
      n=$(line_count "$d" lost) in=$(line_count "$d" packets)
      pct=$(awk -v n="$n" -v i="$in" 'BEGIN { printf "%.2f", 100 * n / i }')
      awk -v p="$pct" 'BEGIN { exit !(p >= 0.3 && p <= 3) }' || fail "$d: $n of $in lost ($pct %)"
    done
  fi
}

@test "fastcat moves 32 MiB byte-exact over a lab with delay, 0.5 % loss and reordering jitter" {
  wanlab_up "$LAB" --delay-ms 5 --loss 0.005 --jitter-ms 1 --reorder --mtu 9000
  mkpayload "$T/in" $((32 * 1048576))
  fc_over_lab "$T/in" "$T/out" 60
  assert_same_bytes "$T/in" "$T/out"
  if [[ $WL_IMPL == delayline ]]; then  # the faults did hit the transfer
    (($(line_count 'A->B' lost) > 0)) || fail "no packet lost: $(wanlab_stats)"
    (($(line_count 'A->B' reordered) > 0)) || fail "no packet reordered: $(wanlab_stats)"
  fi
}

@test "the rate limit holds: 64 MiB over a 100 Mbit/s lab take more than 4 s (5.4 s at the rate)" {
  wanlab_up "$LAB" --rate 100mbit --delay-ms 1
  truncate -s 64M "$T/in"
  fc_over_lab "$T/in" "$T/out" 60
  assert_equal "$(stat -c %s "$T/out")" $((64 * 1048576))
  ((MS > 4000)) || fail "64 MiB in $MS ms: faster than 100 Mbit/s"
}
