#!/usr/bin/env bats
# acl.bats - listener hardening: --allow/--deny on TCP and UDP listeners
# (IPv4, IPv6, IPv4-mapped; deny wins; refused peers are closed or dropped
# and the listener keeps waiting; -v names the rule), the mode of a Unix
# listener's socket file (0600, --unix-mode) and the usage errors.
# Source addresses on loopback: nc.openbsd -s 127.0.0.2 (TCP) and socat
# bind=127.0.0.2 (UDP); a fastcat client always comes from 127.0.0.1.

load helpers

setup_file() {
  mkpayload "$BATS_FILE_TMPDIR/P" 300000
}

setup() {
  T=$BATS_TEST_TMPDIR
  P=$BATS_FILE_TMPDIR/P
}

teardown() {
  dump_logs
  fc_cleanup
  [[ -z ${OWN_DIR:-} ]] || rm -rf "$OWN_DIR"
}

# nc_from SRC PORT IN: nc.openbsd connects from address SRC, sends IN, half-closes.
nc_from() { timeout 10 nc.openbsd -N -s "$1" 127.0.0.1 "$2" <"$3" >/dev/null 2>&1; }

# refused_line WHAT ADDR WHY: the ERE of the -v line for a refused peer.
refused_line() {
  local why=${3//./\\.}
  printf '^fastcat: refused %s from %s:[0-9]+ \\(%s\\)$' "$1" "${2//./\\.}" "$why"
}

# ------------------------------------------------------------ tcp

@test "tcp --allow: a matching peer's data goes through byte-exact" {
  local rc
  fc_listen L -- --allow 127.0.0.0/8 --allow 192.0.2.1
  run -0 fcx "$P" /dev/null 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 20
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$P" "$T/L.out"
  ! grep -q 'refused' "$T/L.err" || fail "a refusal logged: $(cat "$T/L.err")"
}

@test "tcp --deny: the peer is refused and logged (-v); the one-shot listener then serves an allowed client" {
  need nc.openbsd
  local rc
  printf 'DENIED DATA\n' >"$T/denied"
  fc_listen L -- --deny 127.0.0.2
  nc_from 127.0.0.2 "$L_PORT" "$T/denied" || true
  wait_for_line "$T/L.err" "$(refused_line connection 127.0.0.2 '--deny 127.0.0.2')" "$L_PID"
  is_alive "$L_PID" || fail "the listener exited after refusing a peer"
  run -0 fcx "$P" /dev/null 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 20
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$P" "$T/L.out"
  assert_equal "$(grep -c '^fastcat: refused' "$T/L.err")" 1
  grep -Eq '^fastcat: connection from 127\.0\.0\.1:[0-9]+' "$T/L.err" || fail "$(cat "$T/L.err")"
}

@test "tcp --allow without a match: the client sees a failure (reset), not a clean end; a matching peer gets in" {
  need nc.openbsd
  local rc
  printf 'from 127.0.0.2\n' >"$T/ok"
  fc_listen L -- --allow 127.0.0.2
  # Sending nothing, the client would take a FIN for a listener that is done, and exit 0.
  run fcx /dev/null "$T/c.out" 127.0.0.1 "$L_PORT"
  (( status != 0 && status != 124 )) || fail "refused fastcat client: exit $status, expected a failure"
  wait_for_line "$T/L.err" "$(refused_line connection 127.0.0.1 'no --allow matches it')" "$L_PID"
  is_alive "$L_PID" || fail "the listener exited after refusing a peer"
  nc_from 127.0.0.2 "$L_PORT" "$T/ok"
  wait_exit rc "$L_PID" 20
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$T/ok" "$T/L.out"
}

@test "deny wins over allow, whichever comes first on the command line" {
  need nc.openbsd
  local rc order
  printf 'DENIED DATA\n' >"$T/denied"
  for order in "--allow 127.0.0.0/8 --deny 127.0.0.2/32" "--deny 127.0.0.2/32 --allow 127.0.0.0/8"; do
    # shellcheck disable=SC2086
    fc_listen L -- $order
    nc_from 127.0.0.2 "$L_PORT" "$T/denied" || true
    wait_for_line "$T/L.err" "$(refused_line connection 127.0.0.2 '--deny 127.0.0.2/32')" "$L_PID"
    run -0 fcx "$P" /dev/null 127.0.0.1 "$L_PORT"
    wait_exit rc "$L_PID" 20
    assert_equal "[$order] listener exit $rc" "[$order] listener exit 0"
    assert_same_bytes "$P" "$T/L.out"
  done
}

@test "IPv6: --allow ::1 lets ::1 in; --deny ::1/128 refuses it and keeps listening" {
  skip_unless_ipv6
  local rc
  fc_listen L --addr ::1 -- --allow ::1 --allow 10.0.0.0/8
  run -0 fcx "$P" /dev/null ::1 "$L_PORT"
  wait_exit rc "$L_PID" 20
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$P" "$T/L.out"

  fc_listen M --addr ::1 -- --deny ::1/128
  run fcx "$P" /dev/null ::1 "$M_PORT"
  (( status != 0 && status != 124 )) || fail "refused ::1 client: exit $status"
  wait_for_line "$T/M.err" "^fastcat: refused connection from \[::1\]:[0-9]+ \(--deny ::1/128\)$" "$M_PID"
  is_alive "$M_PID" || fail "the listener exited after refusing a peer"
  [[ ! -s $T/M.out ]] || fail "a refused peer's data reached stdout"
}

@test "IPv4-mapped: a dual-stack listener matches ::ffff:127.0.0.1 against IPv4 rules (and ::ffff: rules)" {
  skip_unless_ipv6
  local rc rule
  for rule in 127.0.0.1 ::ffff:127.0.0.0/104; do
    fc_listen L --addr '' -- --allow "$rule"
    grep -q '^fastcat: listening on \[::\]:' "$T/L.err" || skip "no dual-stack listener here"
    run -0 fcx "$P" /dev/null 127.0.0.1 "$L_PORT"
    wait_exit rc "$L_PID" 20
    assert_equal "[--allow $rule] listener exit $rc" "[--allow $rule] listener exit 0"
    assert_same_bytes "$P" "$T/L.out"
  done

  # An IPv4 deny refuses the mapped IPv4 peer, and says so in IPv4 form; ::1 is not IPv4.
  fc_listen M --addr '' -- --deny 127.0.0.0/8
  run fcx "$P" /dev/null 127.0.0.1 "$M_PORT"
  (( status != 0 && status != 124 )) || fail "refused mapped client: exit $status"
  wait_for_line "$T/M.err" "$(refused_line connection 127.0.0.1 '--deny 127.0.0.0/8')" "$M_PID"
  run -0 fcx "$P" /dev/null ::1 "$M_PORT"
  wait_exit rc "$M_PID" 20
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$P" "$T/M.out"
}

# ------------------------------------------------------------ udp

@test "udp --deny: a refused sender's datagrams are dropped (-v: one line per sender); an allowed one's arrive byte-exact" {
  need socat
  local rc
  printf 'DENIED DATAGRAM\n' >"$T/denied"
  fc_listen L -- -u --deny 127.0.0.2
  # 4 datagrams of 4 bytes from one port, then one from another port
  run -0 timeout 10 socat -b 4 -u "FILE:$T/denied" "UDP-SENDTO:127.0.0.1:$L_PORT,bind=127.0.0.2"
  run -0 timeout 10 socat -u "FILE:$T/denied" "UDP-SENDTO:127.0.0.1:$L_PORT,bind=127.0.0.2"
  wait_for_line "$T/L.err" "$(refused_line datagram 127.0.0.2 '--deny 127.0.0.2')" "$L_PID"
  is_alive "$L_PID" || fail "the listener exited after refusing a sender"
  run -0 fcx "$P" /dev/null -u 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 20
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$P" "$T/L.out"
  assert_equal "$(grep -c '^fastcat: refused datagram' "$T/L.err")" 2 # two ports, two lines
}

# udp_rxq PORT: bytes queued on the UDP socket bound to PORT (/proc/net/udp rx_queue).
udp_rxq() {
  local want f
  want=$(printf ':%04X' "$1")
  while read -r -a f; do
    [[ ${f[1]} == *"$want" ]] && { echo $((16#${f[4]#*:})); return 0; }
  done </proc/net/udp
  echo 0
}

# wait_rxq_above PORT BYTES: until more than BYTES are queued on PORT (10 s).
wait_rxq_above() {
  local start
  start=$(now_us)
  until (( $(udp_rxq "$1") > $2 )); do
    (( $(now_us) - start < 10000000 )) || { echo "# rx queue of port $1 stuck at $2" >&2; return 1; }
    sleep 0.05
  done
}

@test "udp: datagrams that a refused sender queued before the listener locked on never reach stdout" {
  need socat
  local rc q
  [[ -r /proc/net/udp ]] || skip "no /proc/net/udp"
  printf 'DENIED\n' >"$T/denied"
  fc_listen L -- -u --deny 127.0.0.2
  kill -STOP "$L_PID" # the queue fills while the listener sleeps: A1, D, A2, EOF
  mkfifo "$T/fifo"
  bg_start C "$T/fifo" "$T/c.out" "$FASTCAT" -u 127.0.0.1 "$L_PORT"
  exec 5>"$T/fifo"
  printf 'A1\n' >&5
  wait_rxq_above "$L_PORT" 0
  q=$(udp_rxq "$L_PORT")
  run -0 timeout 10 socat -u "FILE:$T/denied" "UDP-SENDTO:127.0.0.1:$L_PORT,bind=127.0.0.2"
  wait_rxq_above "$L_PORT" "$q"
  q=$(udp_rxq "$L_PORT")
  printf 'A2\n' >&5
  wait_rxq_above "$L_PORT" "$q"
  q=$(udp_rxq "$L_PORT")
  exec 5>&-
  wait_rxq_above "$L_PORT" "$q" # the EOF datagram
  kill -CONT "$L_PID"
  wait_exit rc "$L_PID" 20
  assert_equal "listener exit $rc" "listener exit 0"
  assert_equal "$(cat "$T/L.out")" "$(printf 'A1\nA2')"
  grep -Eq '^fastcat: dropped a datagram from 127\.0\.0\.2:[0-9]+: not the peer$' "$T/L.err" ||
    fail "no 'dropped' line: $(cat "$T/L.err")"
  wait_exit rc "$C_PID" 20
  assert_equal "client exit $rc" "client exit 0"
}

# ------------------------------------------------------------ usage

@test "usage: a bad CIDR exits 2 with one line naming the option and the value" {
  local v
  for v in 10.0.0.0/33 10.0.0.0/-1 10.0.0.0/8x 10.0.0.0/ 10.0.0.0/+8; do
    usage_exact "fastcat: --allow $v: prefix length must be 0 to 32" -l --allow "$v" 0
  done
  usage_exact "fastcat: --deny ::1/129: prefix length must be 0 to 128" -l --deny ::1/129 0
  for v in 1.2.3 a/8 /8 example.org 256.1.1.1 ' 10.0.0.1' fe80::1%lo; do
    usage_exact "fastcat: --deny $v: not an IPv4 or IPv6 address (ADDRESS or ADDRESS/BITS)" \
      -l --deny "$v" 0
  done
  usage_exact "fastcat: --allow: empty address" -l --allow '' 0
}

@test "usage: more than 64 rules is an error" {
  local args=() i
  for i in $(seq 1 64); do args+=(--deny "10.0.$i.0/24"); done
  usage_exact "fastcat: --allow 10.1.0.0/16: at most 64 --allow and --deny rules" \
    -l "${args[@]}" --allow 10.1.0.0/16 0
  # 64 are fine: the listener starts (and is stopped at once).
  fc_listen L -- "${args[@]}"
}

@test "usage: --allow/--deny need -l and tcp or udp; --unix-mode needs -l, -U and a path; bad modes" {
  local m
  usage_exact "fastcat: --allow: needs -l" --allow 127.0.0.1 127.0.0.1 1
  usage_exact "fastcat: --deny: needs -l" -u --deny ::1 127.0.0.1 1
  usage_exact "fastcat: --deny: needs a tcp or udp listener (Unix peers have no address; see --unix-mode)" \
    -lU --deny 127.0.0.1 "$T/s"
  usage_exact "fastcat: --allow: needs a tcp or udp listener (Unix peers have no address; see --unix-mode)" \
    -l --transport unix-dgram --allow 127.0.0.1 "$T/s"
  usage_exact "fastcat: --unix-mode: needs -l" -U --unix-mode 600 "$T/s"
  usage_exact "fastcat: --unix-mode: needs a Unix socket path (-U)" -l --unix-mode 600 0
  usage_exact "fastcat: --unix-mode: @fc-x is an abstract name, which has no file mode; use a path" \
    -lU --unix-mode 600 @fc-x
  for m in 888 1000 7777 0o600 -1 660x ' 660' rw; do
    usage_exact "fastcat: --unix-mode $m: must be an octal mode from 0 to 777 (e.g. 660)" \
      -lU --unix-mode "$m" "$T/s"
  done
  usage_exact "fastcat: --unix-mode: empty mode (octal, e.g. 660)" -lU --unix-mode '' "$T/s"
  usage_exact "fastcat: --bench and --allow: cannot be combined" --bench --allow 127.0.0.1
  [[ ! -e $T/s ]] || fail "a usage error created $T/s"
}

@test "--help-all names --allow, --deny and --unix-mode" {
  run -0 --separate-stderr "$FASTCAT" --help-all
  assert_output --partial '--allow|--deny CIDR'
  assert_output --partial '--unix-mode MODE'
}

# ------------------------------------------------------------ unix socket mode

@test "unix socket file: 0600 by default whatever the umask; --unix-mode sets it exactly" {
  local rc mask
  for mask in 022 000 077; do
    umask "$mask"
    fc_ulisten L -- -U
    assert_equal "umask $mask: $(stat -c %a "$L_PATH")" "umask $mask: 600"
    kill -TERM "$L_PID"
    wait_exit rc "$L_PID" 10
  done
  umask 077
  fc_ulisten M -- -U --unix-mode 660
  assert_equal "$(stat -c %a "$M_PATH")" 660
  fc_ulisten N -- -Uu --unix-mode 0666
  assert_equal "$(stat -c %a "$N_PATH")" 666
  fc_ulisten O -- -U --transport unix-seqpacket --unix-mode 0
  assert_equal "$(stat -c %a "$O_PATH")" 0
}

@test "unix socket file 0600: another user (nobody) gets 'Permission denied'; --unix-mode 666 lets it in" {
  local rc d
  (( EUID == 0 )) || skip "needs root to run a client as nobody"
  command -v setpriv >/dev/null || skip "setpriv not installed"
  AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  "${AS_NOBODY[@]}" "$FASTCAT" --version >/dev/null 2>&1 || skip "nobody cannot run $FASTCAT"
  OWN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fastcat-acl.XXXXXX")
  chmod 711 "$OWN_DIR"
  "${AS_NOBODY[@]}" test -x "$OWN_DIR" || skip "nobody cannot reach $OWN_DIR"
  printf 'from nobody\n' >"$T/msg"

  fc_ulisten L --addr "$OWN_DIR/open.sock" -- -U --unix-mode 666
  run -0 io "$T/msg" /dev/null "${AS_NOBODY[@]}" "$FASTCAT" -U "$L_PATH"
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$T/msg" "$T/L.out"

  fc_ulisten M --addr "$OWN_DIR/closed.sock" -- -U
  run --separate-stderr io "$T/msg" /dev/null "${AS_NOBODY[@]}" "$FASTCAT" -U "$M_PATH"
  (( status != 0 && status != 124 )) || fail "nobody's client: exit $status, expected a failure"
  assert_equal "$stderr" "fastcat: connect $M_PATH: Permission denied"
  is_alive "$M_PID" || fail "the listener exited"
  run -0 fcx "$T/msg" /dev/null -U "$M_PATH" # its owner still gets in
  wait_exit rc "$M_PID" 10
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$T/msg" "$T/M.out"
}
