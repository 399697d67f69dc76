#!/usr/bin/env bats
# reliable.bats - --reliable over loopback: byte-exact from a file and a pipe over IPv4 and
# IPv6, an empty stdin, --dgram-size; through tests/udp-proxy.py, a relay that loses,
# duplicates and reorders datagrams and throws foreign ones at both ends (byte-exact, the
# foreign ones never written); an end that dies or goes quiet (exit 5, what was confirmed or
# written named, the written bytes a prefix); bounded memory at both ends with a stopped
# receiver and a stopped reader of its stdout; and against plain fastcat and nc.openbsd
# (refused, exit 3, nothing of the stream in their output). The lab's loss is
# tests/reliable-wan.bats'.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
  PROXY=$BATS_TEST_DIRNAME/udp-proxy.py
}

# rl_listen [--addr A] [--out F] [opts]: a --reliable receiver L with a JSON report.
rl_listen() { fc_listen L "$@" -u --reliable --report=json; }

# proxy_start PORT [opts]: tests/udp-proxy.py in front of PORT; sets PX_PID and PX_PORT.
proxy_start() {
  local port=$1
  shift
  bg_start PX /dev/null "$T/px.port" python3 "$PROXY" "$port" "$@"
  wait_for_line "$T/px.port" '^[0-9]+$' "$PX_PID" || return 1
  PX_PORT=$(head -n 1 "$T/px.port")
}

# send_ok IN PORT [opts]: a --reliable sender of IN to 127.0.0.1:PORT exits 0, the receiver
# L too, and L's output is IN; CJSON and LJSON are the reports.
send_ok() {
  local in=$1 port=$2
  shift 2
  run -0 --separate-stderr fcx "$in" /dev/null -u --reliable --report=json "$@" 127.0.0.1 "$port"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$in" "$T/L.out"
  CJSON=$(json_report "$T/c.err")
  LJSON=$(json_report "$T/L.err")
}

@test "reliable: a file over 127.0.0.1, byte-exact; both ends exit 0 and report it verified, the largest datagrams UDP has" {
  mkpayload "$T/a" $((20 * 1024 * 1024 + 7))
  rl_listen
  send_ok "$T/a" "$L_PORT"
  jq_is "$CJSON" .verified true
  jq_is "$LJSON" .verified true
  jq_is "$LJSON" .received.bytes $((20 * 1024 * 1024 + 7))
  # loopback's MTU (65536) allows UDP's largest datagram, 65507 bytes: 32 of header, the data
  jq_is "$CJSON" .reliable.payload 65475
  jq_true "$CJSON" '.reliable.datagrams >= 321 and .reliable.acks > 0'
}

@test "reliable: a pipe over ::1 with --dgram-size 1000: byte-exact, 1000 data bytes a datagram (strace: no datagram larger)" {
  need strace
  mkpayload "$T/a" 3000001
  mkfifo "$T/pipe"
  rl_listen --addr ::1
  cat "$T/a" >"$T/pipe" &
  run -0 --separate-stderr io "$T/pipe" /dev/null "${STRACE[@]}" -f -e trace=sendmmsg,sendto,sendmsg \
    -o "$T/strace" "$FASTCAT" -u --reliable --dgram-size 1000 --report=json ::1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$T/a" "$T/L.out"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .reliable.payload 1000
  jq_true "$CJSON" '.reliable.datagrams >= 3001'
  # each datagram: 32 bytes of header and at most 1000 of data
  local big
  big=$(grep -oE 'msg_len=[0-9]+' "$T/strace" | awk -F= '$2 > 1032' | head -n 3)
  [[ -z $big ]] || fail "datagrams larger than 1032 bytes: $big"
  grep -q 'msg_len=1032' "$T/strace" || fail "no datagram of 1032 bytes: $(head -c 2000 "$T/strace")"
}

@test "reliable: an empty stdin: both exit 0, nothing written, verified" {
  rl_listen
  send_ok /dev/null "$L_PORT"
  jq_is "$CJSON" .verified true
  [[ ! -s $T/L.out ]] || fail "output not empty"
}

@test "reliable: through a relay losing 5 %, duplicating 2 %, reordering 5 % and throwing foreign datagrams at both ends: byte-exact, repaired" {
  mkpayload "$T/a" $((6 * 1024 * 1024 + 11))
  rl_listen
  proxy_start "$L_PORT" --loss 0.05 --dup 0.02 --reorder 0.05 --garbage 40 --seed 7
  send_ok "$T/a" "$PX_PORT" --dgram-size 1400
  jq_is "$CJSON" .verified true
  jq_true "$CJSON" '.reliable.resent > 0 and .reliable.resent_bytes > 0'
  jq_true "$LJSON" '.reliable.duplicates > 0 and .reliable.gap_acks > 0'
}

@test "reliable: full-size datagrams through a relay losing 10 % both ways: byte-exact" {
  mkpayload "$T/a" $((8 * 1024 * 1024 + 1))
  rl_listen
  proxy_start "$L_PORT" --loss 0.10 --seed 3
  send_ok "$T/a" "$PX_PORT"
  jq_true "$CJSON" '.reliable.resent > 0'
}

@test "reliable: the receiver killed mid-stream: the sender exits 5 naming the bytes confirmed" {
  mkpayload "$T/a" $((64 * 1024 * 1024))
  rl_listen
  bg_start S "$T/a" /dev/null "$FASTCAT" -u --reliable --rate-limit 8M -w 2 127.0.0.1 "$L_PORT"
  wait_for_size "$T/L.out" $((2 * 1024 * 1024))
  kill -9 "$L_PID"
  local rc
  wait_exit rc "$S_PID" 15
  assert_equal "sender exit $rc" "sender exit 5"
  grep -Eq '^fastcat: --reliable: (the receiver is gone \(port unreachable\)|the receiver said nothing for 2 s): [0-9]+ of [0-9]+ bytes confirmed$' "$T/S.err" ||
    fail "no exit line: $(cat "$T/S.err")"
}

@test "reliable: the sender killed mid-stream: the receiver exits 5 after -w, its output the stream's first bytes" {
  mkpayload "$T/a" $((64 * 1024 * 1024))
  rl_listen -w 2
  bg_start S "$T/a" /dev/null "$FASTCAT" -u --reliable --rate-limit 8M 127.0.0.1 "$L_PORT"
  wait_for_size "$T/L.out" $((2 * 1024 * 1024))
  kill -9 "$S_PID"
  local rc n
  wait_exit rc "$L_PID" 15
  assert_equal "receiver exit $rc" "receiver exit 5"
  n=$(stat -c %s "$T/L.out")
  grep -q "^fastcat: --reliable: the sender said nothing for 2 s: $n bytes written in order, and its end never came$" "$T/L.err" ||
    fail "no exit line for $n bytes: $(cat "$T/L.err")"
  ((n >= 2 * 1024 * 1024 && n < 64 * 1024 * 1024)) || fail "$n bytes written"
  cmp -n "$n" "$T/a" "$T/L.out" || fail "the $n bytes written are not the stream's first"
}

@test "reliable: a relay that goes silent mid-stream: both ends exit 5 after -w; the receiver's output a prefix" {
  mkpayload "$T/a" $((16 * 1024 * 1024))
  rl_listen -w 2
  proxy_start "$L_PORT" --cut 2000
  run -5 --separate-stderr fcx "$T/a" /dev/null -u --reliable --dgram-size 1400 -w 2 127.0.0.1 "$PX_PORT"
  [[ $stderr =~ fastcat:\ --reliable:\ the\ receiver\ said\ nothing\ for\ 2\ s:\ [0-9]+\ of\ [0-9]+\ bytes\ confirmed ]] ||
    fail "sender: $stderr"
  local rc n
  wait_exit rc "$L_PID" 15
  assert_equal "receiver exit $rc" "receiver exit 5"
  n=$(stat -c %s "$T/L.out")
  ((n > 0)) || fail "nothing written"
  cmp -n "$n" "$T/a" "$T/L.out" || fail "the $n bytes written are not the stream's first"
}

# vm_hwm PID: the peak resident set of PID in KiB.
vm_hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

@test "reliable: a stopped receiver and a stopped reader of its stdout: both ends' memory stays bounded (VmHWM < 64 MiB) and the stream arrives whole" {
  mkfifo "$T/zeros" "$T/rfifo"
  # the receiver writes into a pipe whose reader is stopped too
  bg_start R "$T/rfifo" "$T/L.out" cat
  fc_listen L --out "$T/rfifo" -u --reliable --report=json
  bg_start Z /dev/null "$T/zeros" head -c $((400 * 1024 * 1024)) /dev/zero
  bg_start S "$T/zeros" /dev/null "$FASTCAT" -u --reliable 127.0.0.1 "$L_PORT"
  wait_for_size "$T/L.out" $((16 * 1024 * 1024))
  kill -STOP "$R_PID"
  sleep 1.5
  kill -STOP "$L_PID"
  sleep 1.5
  local hs hl rc
  hs=$(vm_hwm "$S_PID")
  hl=$(vm_hwm "$L_PID")
  kill -CONT "$L_PID" "$R_PID"
  ((hs < 65536)) || fail "the sender's VmHWM is $hs KiB"
  ((hl < 65536)) || fail "the receiver's VmHWM is $hl KiB"
  wait_exit rc "$S_PID" 60
  assert_equal "sender exit $rc" "sender exit 0"
  listener_ok 30
  wait_exit rc "$R_PID" 10
  [[ $(stat -c %s "$T/L.out") == $((400 * 1024 * 1024)) ]] || fail "$(stat -c %s "$T/L.out") bytes came out"
  cmp -s "$T/L.out" <(head -c $((400 * 1024 * 1024)) /dev/zero) || fail "not all zeros"
}

@test "reliable: into a plain fastcat -lu: both exit 3 and say why; nothing written" {
  fc_listen L -u
  mkpayload "$T/a" 300000
  run -3 --separate-stderr fcx "$T/a" /dev/null -u --reliable 127.0.0.1 "$L_PORT"
  assert_equal "$stderr" "fastcat: --reliable: 127.0.0.1:$L_PORT refused it: the receiver runs without --reliable (give it -lu --reliable)"
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "receiver exit $rc" "receiver exit 3"
  grep -q '^fastcat: --reliable: the peer sends --reliable datagrams; give --reliable at this end too$' "$T/L.err" ||
    fail "receiver: $(cat "$T/L.err")"
  [[ ! -s $T/L.out ]] || fail "the plain receiver wrote $(stat -c %s "$T/L.out") bytes"
}

@test "reliable: into nc.openbsd -lu: the sender exits 3 after -w naming the mode; nc's output holds only the 32-byte hellos" {
  need nc.openbsd
  # nc.openbsd -l -u -v prints "Bound on localhost PORT"
  bg_listen N /dev/null "$T/n.out" '^Bound on .* ([0-9]+)$' nc.openbsd -l -u -v 127.0.0.1 0
  mkpayload "$T/a" 300000
  run -3 --separate-stderr fcx "$T/a" /dev/null -u --reliable -w 2 127.0.0.1 "$N_PORT"
  assert_equal "$stderr" "fastcat: --reliable: no answer from 127.0.0.1:$N_PORT in 2 s: is it fastcat -lu --reliable?"
  local n
  n=$(stat -c %s "$T/n.out")
  ((n > 0 && n % 32 == 0 && n <= 96)) || fail "nc wrote $n bytes"
  # every 32 bytes: 0xff 'FCR' 'H'
  local hex
  hex=$(od -An -v -tx1 -w32 "$T/n.out" | awk '{print $1 $2 $3 $4 $5}' | sort -u)
  assert_equal "$hex" "ff46435248"
}

@test "reliable: a plain fastcat -u and nc.openbsd -u into fastcat -lu --reliable: the receiver exits 3, writes nothing and sends nothing back" {
  need nc.openbsd
  mkpayload "$T/a" 300000
  rl_listen
  run --separate-stderr fcx "$T/a" "$T/c.out" -u -q 1 127.0.0.1 "$L_PORT"
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "receiver exit $rc" "receiver exit 3"
  grep -q '^fastcat: --reliable: 127.0.0.1:[0-9]* is no --reliable sender (its first datagram is no hello): nothing written$' "$T/L.err" ||
    fail "receiver: $(cat "$T/L.err")"
  [[ ! -s $T/L.out ]] || fail "the receiver wrote $(stat -c %s "$T/L.out") bytes"
  [[ ! -s $T/c.out ]] || fail "the plain sender got $(stat -c %s "$T/c.out") bytes back"
  rm -f "$T/L.out"
  rl_listen
  run io "$T/a" "$T/n.out" nc.openbsd -u -w 1 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 10
  assert_equal "receiver exit $rc" "receiver exit 3"
  [[ ! -s $T/L.out ]] || fail "the receiver wrote $(stat -c %s "$T/L.out") bytes"
  [[ ! -s $T/n.out ]] || fail "nc got $(stat -c %s "$T/n.out") bytes back"
}

@test "reliable -k: three senders one after another into one -lu -k --reliable: its stdout the three streams in order; a plain fastcat -u between them starts no session and writes nothing" {
  mkpayload "$T/a" 3000001
  mkpayload "$T/b" 5000003
  rl_listen -k
  run --separate-stderr fcx "$T/a" /dev/null -u --reliable 127.0.0.1 "$L_PORT"
  assert_equal "sender 1 exit $status" "sender 1 exit 0"
  run --separate-stderr fcx "$T/b" "$T/c.out" -u -q 1 127.0.0.1 "$L_PORT"
  run --separate-stderr fcx "$T/b" /dev/null -u --reliable 127.0.0.1 "$L_PORT"
  assert_equal "sender 2 exit $status" "sender 2 exit 0"
  run --separate-stderr fcx "$T/a" /dev/null -u --reliable 127.0.0.1 "$L_PORT"
  assert_equal "sender 3 exit $status" "sender 3 exit 0"
  wait_for_count "$T/L.err" '"verified":true' 3 "$L_PID"
  cat "$T/a" "$T/b" "$T/a" >"$T/abc"
  assert_same_bytes "$T/abc" "$T/L.out"
  grep -q '^fastcat: dropped a datagram that is no --reliable hello (only one starts a session)$' "$T/L.err" ||
    fail "the plain sender's datagrams: $(cat "$T/L.err")"
  ! grep -q 'is no --reliable sender' "$T/L.err" || fail "the plain sender started a session: $(cat "$T/L.err")"
  [[ ! -s $T/c.out ]] || fail "the plain sender got $(stat -c %s "$T/c.out") bytes back"
  kill -0 "$L_PID" || fail "the -k listener is gone"
}
