#!/usr/bin/env bats
# tcpinfo.bats - what TCP_INFO says in the report (the "tcp" object, the human
# "tcp:" line), --congestion, -O/-I forced past the sysctl cap with
# CAP_NET_ADMIN, and -v's hint at exit. Loopback only, behaviour not timing:
# the hints that need a delayed link (send buffer, receive window, loss, a
# steady slow source) are tests/hints-wan.bats', and their rules are
# unit-tested from a table (tests/unit/test-hint.c).

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
  PERM_DIR=
}

teardown() {
  [[ -z $PERM_DIR ]] || rm -rf "$PERM_DIR"
  dump_logs
  fc_cleanup
}

TCP_KEYS='["busy_s","congestion","cwnd_bytes","delivery_rate_bps","min_rtt_ms","pacing_rate_bps","retransmits","rtt_ms","rttvar_ms","rwnd_limited_s","sndbuf_limited_s"]'

# tcp_transfer [fastcat options...]: 4 MiB from the client to a listener, both
# with --report=json and the options; CJSON and LJSON are their reports.
tcp_transfer() {
  mkpayload "$T/A" 4194304
  fc_listen L --report=json "$@"
  run -0 --separate-stderr fcx "$T/A" "$T/c.out" --report=json "$@" 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 20
  assert_same_bytes "$T/A" "$T/L.out"
  both_reports
}

@test "tcp --report=json: a \"tcp\" object with every key; numbers, or null where the kernel lacks one" {
  tcp_transfer
  local j
  for j in "$CJSON" "$LJSON"; do
    jq_is "$j" '.tcp | keys | tojson' "$TCP_KEYS"
    jq_true "$j" '.tcp | to_entries | map(select(.key != "congestion")) | all(.value == null or (.value | type) == "number")'
    # every Linux since 2.6 gives these
    jq_true "$j" '[.tcp.rtt_ms, .tcp.rttvar_ms, .tcp.cwnd_bytes, .tcp.retransmits] | all(type == "number")'
    jq_true "$j" '.tcp.cwnd_bytes > 0 and .tcp.retransmits >= 0'
    jq_true "$j" '(.tcp.congestion | type) == "string" and (.tcp.congestion | length) > 0'
  done
  if [[ -r /proc/sys/net/ipv4/tcp_congestion_control ]]; then
    jq_is "$CJSON" .tcp.congestion "$(cat /proc/sys/net/ipv4/tcp_congestion_control)"
  fi
  # the sender had data to send, and the limited times are parts of that time
  jq_true "$CJSON" '.tcp.busy_s == null or (.tcp.busy_s >= 0 and .tcp.sndbuf_limited_s <= .tcp.busy_s and .tcp.rwnd_limited_s <= .tcp.busy_s)'
}

@test "tcp on loopback: rtt_ms is small and positive, min_rtt_ms no larger" {
  tcp_transfer
  local j
  for j in "$CJSON" "$LJSON"; do
    jq_true "$j" '.tcp.rtt_ms > 0 and .tcp.rtt_ms < 100'
    jq_true "$j" '.tcp.min_rtt_ms == null or (.tcp.min_rtt_ms >= 0 and .tcp.min_rtt_ms <= .tcp.rtt_ms)'
  done
}

@test "unix, udp --report=json: no \"tcp\" key" {
  printf 'over unix\n' >"$T/req"
  fc_ulisten L -- -U --report=json
  run -0 --separate-stderr fcx "$T/req" "$T/c.out" -U --report=json "$L_PATH"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 20
  both_reports
  jq_true "$CJSON" 'has("tcp") | not'
  jq_true "$LJSON" 'has("tcp") | not'

  fc_listen U -u --report=json
  run -0 --separate-stderr fcx "$T/req" "$T/u.out" -u --report=json 127.0.0.1 "$U_PORT"
  printf '%s\n' "$stderr" >"$T/u.err"
  jq_true "$(json_report "$T/u.err")" 'has("tcp") | not'
}

@test "--report (human): one \"tcp:\" line with rtt, min, cwnd, retransmits, the algorithm" {
  mkpayload "$T/A" 1048576
  fc_listen L --report
  run -0 --separate-stderr fcx "$T/A" "$T/c.out" --report 127.0.0.1 "$L_PORT"
  listener_ok 20
  local re='^fastcat: tcp: rtt [0-9.]+ ms \(min [0-9.?]+\), cwnd [0-9.]+ (B|KiB|MiB|GiB), [0-9]+ retransmits?, [a-z0-9_]+(; .*)?$'
  assert_equal "tcp lines: $(grep -c '^fastcat: tcp:' <<<"$stderr")" "tcp lines: 1"
  grep -Eq "$re" <<<"$stderr" || fail "no tcp: line like /$re/ in: $stderr"
  grep -Eq "$re" "$T/L.err" || fail "the listener has no tcp: line: $(cat "$T/L.err")"
}

@test "--congestion reno: set before connect and listen, read back into the report at both ends" {
  tcp_transfer --congestion reno
  jq_is "$CJSON" .tcp.congestion reno
  # the accepted connection inherits the listener's algorithm
  jq_is "$LJSON" .tcp.congestion reno
}

@test "--congestion reno: setsockopt TCP_CONGESTION before connect" {
  command -v strace >/dev/null || skip "strace not installed"
  printf 'x\n' >"$T/req"
  fc_listen L
  run -0 "${STRACE[@]}" -f -qq -o "$T/tr" -e trace=setsockopt,connect \
    "$FASTCAT" --congestion reno 127.0.0.1 "$L_PORT" <"$T/req"
  # the last TCP_CONGESTION (the real socket's; the first tried the name) precedes connect
  # (strace shows the name as an int: match the option)
  run -0 awk '/setsockopt\([0-9]+, SOL_TCP, TCP_CONGESTION, .*= 0$/ { set = NR } /^[0-9]+ +connect\(/ { print (set && set < NR) ? "before" : "after"; exit }' "$T/tr"
  assert_output before
}

@test "--congestion nosuchalgo: exit 2, one line listing the available algorithms" {
  [[ -r /proc/sys/net/ipv4/tcp_available_congestion_control ]] || skip "no tcp_available_congestion_control"
  local avail
  avail=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)
  usage_exact "fastcat: --congestion nosuchalgo: unknown algorithm (available: ${avail//$'\t'/ })" \
    --congestion nosuchalgo 127.0.0.1 1
  usage_one_line -l --congestion nosuchalgo 0
  assert_equal "${stderr_lines[0]}" "fastcat: --congestion nosuchalgo: unknown algorithm (available: ${avail//$'\t'/ })"
}

@test "--congestion with -U, -u, unix-seqpacket: exit 2, tcp only" {
  usage_exact "fastcat: --congestion: only for tcp (unix has no congestion control)" \
    -U --congestion reno "$T/s.sock"
  usage_exact "fastcat: --congestion: only for tcp (udp has no congestion control)" \
    -u --congestion reno 127.0.0.1 1
  usage_one_line --transport unix-seqpacket --congestion reno "$T/s.sock"
}

@test "--congestion an algorithm not allowed without CAP_NET_ADMIN (as nobody): exit 1, one line" {
  ((EUID == 0)) || skip "needs root to run as nobody"
  command -v setpriv >/dev/null || skip "setpriv not installed"
  local a algo=
  [[ -r /proc/sys/net/ipv4/tcp_allowed_congestion_control ]] || skip "no tcp_allowed_congestion_control"
  for a in $(cat /proc/sys/net/ipv4/tcp_available_congestion_control); do
    grep -qw -- "$a" /proc/sys/net/ipv4/tcp_allowed_congestion_control || { algo=$a; break; }
  done
  [[ -n $algo ]] || skip "every available algorithm is allowed"
  PERM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fastcat-tcpinfo.XXXXXX")
  chmod 755 "$PERM_DIR"
  install -m 755 "$FASTCAT" "$PERM_DIR/fastcat"
  run -1 --separate-stderr timeout 10 setpriv --reuid=nobody --regid=nogroup --clear-groups \
    "$PERM_DIR/fastcat" --congestion "$algo" 127.0.0.1 1 </dev/null
  one_error_line "$stderr" "^fastcat: --congestion $algo: not allowed without CAP_NET_ADMIN \(net.ipv4.tcp_allowed_congestion_control: .+\)$"
}

@test "-O, -I above wmem_max/rmem_max with CAP_NET_ADMIN: SO_SNDBUFFORCE/SO_RCVBUFFORCE, -v says so" {
  has_net_admin || skip "no CAP_NET_ADMIN"
  local wmax rmax snd rcv
  wmax=$(cat /proc/sys/net/core/wmem_max) rmax=$(cat /proc/sys/net/core/rmem_max)
  snd=$(( 2 * wmax > 8388608 ? 2 * wmax : 8388608 ))
  rcv=$(( 2 * rmax > 8388608 ? 2 * rmax : 8388608 ))
  (( snd <= 536870912 && rcv <= 536870912 )) || skip "wmem_max/rmem_max too large to go above"
  printf 'some reply\n' >"$T/reply"
  fc_listen L --in "$T/reply"
  local tr=()
  command -v strace >/dev/null && tr=("${STRACE[@]}" -f -qq -o "$T/tr" -e trace=setsockopt)
  run -0 --separate-stderr io /dev/null "$T/c.out" "${tr[@]}" "$FASTCAT" -v --report=json \
    -O "$snd" -I "$rcv" 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  assert_same_bytes "$T/reply" "$T/c.out"
  grep -q "^fastcat: --sndbuf .*: set with SO_SNDBUFFORCE (CAP_NET_ADMIN)" "$T/c.err" ||
    fail "-v does not say SO_SNDBUFFORCE: $stderr"
  grep -q "^fastcat: --rcvbuf .*: set with SO_RCVBUFFORCE (CAP_NET_ADMIN)" "$T/c.err" ||
    fail "-v does not say SO_RCVBUFFORCE: $stderr"
  ! grep -q '^fastcat: warning:' "$T/c.err" || fail "a capped warning although forced: $stderr"
  local j
  j=$(json_report "$T/c.err")
  jq_true "$j" ".sndbuf > 2 * $wmax and .rcvbuf > 2 * $rmax"
  if ((${#tr[@]})); then
    grep -q "SO_SNDBUFFORCE, \[$snd\]" "$T/tr" || fail "no setsockopt SO_SNDBUFFORCE [$snd] in the trace"
    grep -q "SO_RCVBUFFORCE, \[$rcv\]" "$T/tr" || fail "no setsockopt SO_RCVBUFFORCE [$rcv] in the trace"
  fi
}

@test "-O above wmem_max without CAP_NET_ADMIN: the capped warning, and -v says at exit what it carries at the RTT" {
  no_admin_prefix
  local wmax o
  wmax=$(cat /proc/sys/net/core/wmem_max)
  o=$(( 4 * wmax ))
  (( o <= 1073741824 )) || skip "wmem_max too large to go above"
  printf 'some reply\n' >"$T/reply"
  fc_listen L --in "$T/reply"
  run -0 --separate-stderr io /dev/null "$T/c.out" "${NOADMIN[@]}" "$FASTCAT" -v -O "$o" \
    127.0.0.1 "$L_PORT"
  assert_same_bytes "$T/reply" "$T/c.out"
  grep -q '^fastcat: warning: --sndbuf .*(capped by net.core.wmem_max)$' <<<"$stderr" ||
    fail "no capped warning: $stderr"
  ! grep -q 'SO_SNDBUFFORCE' <<<"$stderr" || fail "forced without CAP_NET_ADMIN: $stderr"
  grep -Eq "^fastcat: --sndbuf [0-9]+ (KiB|MiB) was capped at [0-9]+ bytes \(net.core.wmem_max\): at the measured rtt [0-9.]+ ms one connection carries at most " <<<"$stderr" ||
    fail "no note of what the cap carries at the RTT: $stderr"
}

@test "-v, a slow source on loopback: the hint says the source, not the pipe, was the bottleneck" {
  fc_listen L
  # 640 KiB in ten pieces 0.1 s apart: the connection idles between them
  run -0 --separate-stderr bash -c 'for i in 1 2 3 4 5 6 7 8 9 10; do head -c 65536 /dev/zero; sleep 0.1; done |
    timeout 30 "$1" -v 127.0.0.1 "$2" >/dev/null' _ "$FASTCAT" "$L_PORT"
  listener_ok 20
  assert_equal "hint lines: $(grep -c '^fastcat: hint:' <<<"$stderr")" "hint lines: 1"
  grep -Eq '^fastcat: hint: the connection had data to send (only|under) [0-9]+ % of the [0-9.]+ s: the source \(stdin\) was slower than the network, so the pipe was not the bottleneck$' <<<"$stderr" ||
    fail "no source hint: $stderr"
  # the receiving end sent nothing: no hint there
  ! grep -q '^fastcat: hint:' "$T/L.err" || fail "the receiver gave a hint: $(cat "$T/L.err")"
}

@test "no -v: no hint, also with --report" {
  fc_listen L
  run -0 --separate-stderr bash -c 'for i in 1 2 3 4 5 6; do head -c 65536 /dev/zero; sleep 0.1; done |
    timeout 30 "$1" --report 127.0.0.1 "$2" >/dev/null' _ "$FASTCAT" "$L_PORT"
  listener_ok 20
  ! grep -q '^fastcat: hint:' <<<"$stderr" || fail "a hint without -v: $stderr"
}
