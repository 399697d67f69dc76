#!/usr/bin/env bats
# sockbuf.bats - --sndbuf / --rcvbuf: set before connect()/listen(), the
# effective value (Linux doubles the request) in the report, a warning when
# the kernel capped or raised it (a cap that CAP_NET_ADMIN lifts with
# SO_SNDBUFFORCE/SO_RCVBUFFORCE: tcpinfo.bats).

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
  printf 'some request\n' >"$T/req"
  printf 'some reply\n' >"$T/reply"
}

# setsockopt_before TRACE OPTNAME VALUE SYSCALL: in the strace output TRACE,
# setsockopt(FD, SOL_SOCKET, OPTNAME, [VALUE], ...) comes before SYSCALL(FD, ...
setsockopt_before() {
  perl -e '
    my ($opt, $val, $call) = @ARGV; my ($n, $set, $fd) = (0);
    while (<STDIN>) { $n++; s/^\d+\s+//;
      if (!defined $set && /^setsockopt\((\d+), SOL_SOCKET, \Q$opt\E, \[\Q$val\E\], \d+\) = 0/) {
        ($set, $fd) = ($n, $1); next }
      if (/^\Q$call\E\((\d+),/) {
        if (defined $set && $1 == $fd) { print "ok: setsockopt line $set, $call line $n\n"; exit 0 }
        print "$call(fd $1) at line $n before any setsockopt $opt [$val]\n"; exit 1 }
    }
    print defined $set ? "no $call after setsockopt\n" : "no setsockopt $opt [$val]\n"; exit 1;
  ' "$2" "$3" "$4" <"$1"
}

@test "--sndbuf 64k --rcvbuf 64k (client): setsockopt before connect; report shows 131072" {
  command -v strace >/dev/null || skip "strace not installed"
  fc_listen L --in "$T/reply"
  run -0 --separate-stderr io "$T/req" "$T/c.out" \
    "${STRACE[@]}" -f -qq -o "$T/tr" -e trace=socket,setsockopt,connect \
    "$FASTCAT" --sndbuf 64k --rcvbuf 64k --report=json 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  assert_same_bytes "$T/reply" "$T/c.out"
  run -0 setsockopt_before "$T/tr" SO_SNDBUF 65536 connect
  run -0 setsockopt_before "$T/tr" SO_RCVBUF 65536 connect
  local j
  j=$(json_report "$T/c.err")
  jq_is "$j" .sndbuf 131072
  jq_is "$j" .rcvbuf 131072
}

@test "--rcvbuf 64k --sndbuf 64k (listener): setsockopt before listen; report shows 131072" {
  command -v strace >/dev/null || skip "strace not installed"
  FC_PREFIX=("${STRACE[@]}" -f -qq -o "$T/tr" -e trace=socket,setsockopt,bind,listen)
  fc_listen L --in "$T/reply" --rcvbuf 64k --sndbuf 64k --report=json
  FC_PREFIX=()
  run -0 fcx "$T/req" "$T/c.out" 127.0.0.1 "$L_PORT"
  local rc
  wait_exit rc "$L_PID" 20
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$T/req" "$T/L.out"
  run -0 setsockopt_before "$T/tr" SO_RCVBUF 65536 listen
  run -0 setsockopt_before "$T/tr" SO_SNDBUF 65536 listen
  local j
  j=$(json_report "$T/L.err")
  jq_is "$j" .sndbuf 131072
  jq_is "$j" .rcvbuf 131072
}

@test "-O 64k -I 64k with -v: the effective sizes are printed" {
  fc_listen L --in "$T/reply"
  run -0 fcx "$T/req" "$T/c.out" -v -O 64k -I 64k 127.0.0.1 "$L_PORT"
  assert_output --regexp 'SO_SNDBUF 131072'
  assert_output --regexp 'SO_RCVBUF 131072'
}

@test "--sndbuf 512M without CAP_NET_ADMIN: warning, kernel-capped value (2 x wmem_max) in the report, transfer works" {
  local want=$(( 2 * $(cat /proc/sys/net/core/wmem_max) ))
  (( want < 2 * 536870912 )) || skip "wmem_max is too large for 512M to be capped"
  no_admin_prefix
  fc_listen L --in "$T/reply"
  run -0 --separate-stderr io "$T/req" "$T/c.out" "${NOADMIN[@]}" "$FASTCAT" --sndbuf 512M \
    --report=json 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  assert_same_bytes "$T/reply" "$T/c.out"
  grep -q '^fastcat: warning: --sndbuf ' "$T/c.err" || fail "no '--sndbuf' warning in: $stderr"
  jq_is "$(json_report "$T/c.err")" .sndbuf "$want"
}

@test "--rcvbuf 512M without CAP_NET_ADMIN: warning, kernel-capped value (2 x rmem_max) in the report, transfer works" {
  local want=$(( 2 * $(cat /proc/sys/net/core/rmem_max) ))
  (( want < 2 * 536870912 )) || skip "rmem_max is too large for 512M to be capped"
  no_admin_prefix
  fc_listen L --in "$T/reply"
  run -0 --separate-stderr io "$T/req" "$T/c.out" "${NOADMIN[@]}" "$FASTCAT" --rcvbuf 512M \
    --report=json 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  assert_same_bytes "$T/reply" "$T/c.out"
  grep -q '^fastcat: warning: --rcvbuf ' "$T/c.err" || fail "no '--rcvbuf' warning in: $stderr"
  jq_is "$(json_report "$T/c.err")" .rcvbuf "$want"
}

@test "--sndbuf 1: the kernel raises it to its minimum; warning, transfer works" {
  fc_listen L --in "$T/reply"
  run -0 --separate-stderr fcx "$T/req" "$T/c.out" --sndbuf 1 --report=json 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  assert_same_bytes "$T/reply" "$T/c.out"
  grep -q '^fastcat: warning: --sndbuf ' "$T/c.err" || fail "no '--sndbuf' warning in: $stderr"
  jq_true "$(json_report "$T/c.err")" '.sndbuf > 2'
}
