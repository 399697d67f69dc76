#!/usr/bin/env bats
# udp.bats - UDP transport (-u): byte-exact transfers over 127.0.0.1 and ::1
# at sizes loopback does not drop (receiver started first), the listener
# locking onto its first peer, zero-length EOF datagrams and --no-dgram-eof,
# --dgram-size cutting (strace + JSON), whole/truncated datagrams, oversized
# datagram errors, and interop with nc.openbsd -u and socat UDP-* peers.

load helpers

setup_file() {
  mkpayload "$BATS_FILE_TMPDIR/A" 1048576   # client -> listener
  mkpayload "$BATS_FILE_TMPDIR/B" 200000    # listener -> client
  mkpayload "$BATS_FILE_TMPDIR/a" 30000     # small payloads for interop
  mkpayload "$BATS_FILE_TMPDIR/b" 40000
}

setup() {
  A=$BATS_FILE_TMPDIR/A
  B=$BATS_FILE_TMPDIR/B
  T=$BATS_TEST_TMPDIR
}

# py_port NAME: wait for a python helper started with bg_start NAME ...
# $T/NAME.port to print its port; sets NAME_PORT.
py_port() {
  local v=${1}_PID
  wait_for_line "$T/$1.port" '^[0-9]+$' "${!v}" || return 1
  printf -v "${1}_PORT" '%s' "$(head -n 1 "$T/$1.port")"
}

# udp_xfer ADDR: client sends A (1 MiB in 65507-byte datagrams), the
# listener answers with B once it has the client's address; both ends exit
# on the peer's EOF datagram. Sets CJSON and LJSON.
udp_xfer() {
  local addr=$1 rc
  fc_listen L --addr "$addr" --in "$B" -u --report=json
  run -0 --separate-stderr fcx "$A" "$T/c.out" -u --report=json "$addr" "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"   # client -> listener
  assert_same_bytes "$B" "$T/c.out"   # listener -> client
  both_reports
}

# ------------------------------------------------------------ transfers

@test "IPv4: 1 MiB to the listener, 200000 B back, byte-exact; 65507-byte datagrams (JSON)" {
  udp_xfer 127.0.0.1
  jq_is "$CJSON" .transport udp
  jq_is "$LJSON" .transport udp
  jq_is "$CJSON" .chunk_size 65507
  jq_is "$CJSON" .peer "127.0.0.1:$L_PORT"
  jq_is "$LJSON" .local "127.0.0.1:$L_PORT"
  jq_is "$LJSON" .peer "$(jq -r .local <<<"$CJSON")"
  jq_is "$CJSON" .sent.bytes 1048576
  jq_is "$CJSON" .sent.datagrams 17          # 16 x 65507 + 464
  jq_is "$CJSON" .sent.max_write 65507
  jq_is "$LJSON" .received.bytes 1048576
  jq_is "$LJSON" .received.max_read 65507
  jq_is "$LJSON" .received.truncated 0
  jq_is "$CJSON" .received.bytes 200000
  # -v: "connection from ADDR:PORT" (optionally followed by ", SO_SNDBUF ...")
  grep -Eq "^fastcat: connection from $(jq -r .local <<<"$CJSON")(,|\$)" "$T/L.err" ||
    fail "no 'connection from' line in: $(cat "$T/L.err")"
}

@test "the report gives the chunk sizes each direction used: a udp receiver reads whole datagrams (JSON and the summary line)" {
  udp_xfer 127.0.0.1
  jq_is "$CJSON" '[.sent.read_size, .sent.write_size] | map(tostring) | join(" ")' "65507 65507"
  jq_is "$LJSON" '[.received.read_size, .received.write_size] | map(tostring) | join(" ")' "65536 65507"
  jq_is "$LJSON" .chunk_size 65507   # the configured size stays at the top level
  fc_listen L2 --in "$B" -u --report
  run -0 --separate-stderr fcx "$A" "$T/c2.out" -u --report 127.0.0.1 "$L2_PORT"
  [[ $stderr == *"sent in 65507 B, out 65507 B; received in 64 KiB, out 65507 B, SO_SNDBUF"* ]] ||
    fail "no per-direction chunk sizes in: $stderr"
}

@test "IPv6 ::1: 1 MiB to the listener, 200000 B back, byte-exact" {
  skip_unless_ipv6
  udp_xfer ::1
  jq_is "$CJSON" .peer "[::1]:$L_PORT"
  jq_true "$LJSON" '.peer | test("^\\[::1\\]:[0-9]+$")'
  grep -q "^fastcat: listening on \[::1\]:$L_PORT\$" "$T/L.err" || fail "$(cat "$T/L.err")"
}

@test "0 B: only EOF datagrams; both ends exit 0 with nothing received" {
  fc_listen L -u
  run -0 fcx /dev/null "$T/c.out" -u 127.0.0.1 "$L_PORT"
  listener_ok 10
  assert_equal "$(stat -c %s "$T/L.out") $(stat -c %s "$T/c.out")" "0 0"
}

@test "largest datagrams arrive whole: 65507 B over IPv4 (default), -B 65527 over ::1" {
  local rc
  mkpayload "$T/p4" 65507
  fc_listen L -u --report=json
  run -0 fcx "$T/p4" "$T/c.out" -u 127.0.0.1 "$L_PORT"
  listener_ok 10
  assert_same_bytes "$T/p4" "$T/L.out"
  jq_is "$(json_report "$T/L.err")" .received.max_read 65507
  skip_unless_ipv6
  mkpayload "$T/p6" 65527
  fc_listen M --addr ::1 -u --report=json
  run -0 fcx "$T/p6" "$T/c.out" -u -B 65527 ::1 "$M_PORT"
  wait_exit rc "$M_PID" 10
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$T/p6" "$T/M.out"
  jq_is "$(json_report "$T/M.err")" .received.max_read 65527
}

# ------------------------------------------------------------ peer locking

@test "the listener locks onto the first peer: replies reach it, a second sender is ignored" {
  need python3
  printf 'reply from the listener\n' >"$T/reply"
  fc_listen L --in "$T/reply" -u
  bg_start PY /dev/null "$T/py.out" timeout 20 python3 -c '
import socket, sys, time
addr = ("127.0.0.1", int(sys.argv[1]))
s1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s1.settimeout(10)
s2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s2.settimeout(0.5)
s1.sendto(b"first\n", addr)
got = b""
while True:                      # the reply, then the EOF datagram
    d, src = s1.recvfrom(65535)
    if src != addr: print("reply from", src); continue
    if not d: break
    got += d
print("s1 got:", got.decode().strip(), flush=True)
s2.sendto(b"intruder\n", addr)   # after the lock: must be ignored
time.sleep(0.2)
s1.sendto(b"second\n", addr)
s1.sendto(b"", addr)             # EOF
try:
    print("s2 got:", s2.recv(65535))
except socket.timeout:
    print("s2 got nothing")
' "$L_PORT"
  local rc
  wait_exit rc "$PY_PID" 20
  assert_equal "python exit $rc" "python exit 0"
  listener_ok 10
  run cat "$T/py.out"
  assert_output "s1 got: reply from the listener
s2 got nothing"
  assert_equal "$(cat "$T/L.out")" "first
second"
}

# ------------------------------------------------------------ EOF datagrams

@test "a zero-length datagram is EOF: the receiver exits 0 and sends its own EOF back" {
  need python3
  fc_listen L -u
  run -0 timeout 20 python3 -c '
import socket, sys
addr = ("127.0.0.1", int(sys.argv[1]))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
s.sendto(b"hello\n", addr); s.sendto(b"", addr)
d = s.recv(65535)
print("eof back" if d == b"" else "got %r" % d)' "$L_PORT"
  assert_output "eof back"
  listener_ok 10
  assert_equal "$(cat "$T/L.out")" "hello"
}

# udp_sink NAME: python UDP receiver on 127.0.0.1; prints each datagram's
# length, "timeout" after 2 s of silence, stops after a zero-length one.
udp_sink() {
  bg_start "$1" /dev/null "$T/$1.port" timeout 20 python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
s.settimeout(2)
while True:
    try:
        d = s.recv(65535)
    except socket.timeout:
        print("timeout"); break
    print(len(d), flush=True)
    if not d: break'
  py_port "$1"
}

@test "the sender ends with one zero-length datagram (-q 0, python receiver)" {
  need python3
  udp_sink S
  printf 'hello' >"$T/p"
  run -0 fcx "$T/p" /dev/null -u -q 0 127.0.0.1 "$S_PORT"
  local rc
  wait_exit rc "$S_PID" 10
  assert_equal "python exit $rc" "python exit 0"
  assert_equal "$(tail -n +2 "$T/S.port" | tr '\n' ' ')" "5 0 "
}

@test "--no-dgram-eof: the sender sends no zero-length datagram" {
  need python3
  udp_sink S
  printf 'hello' >"$T/p"
  run -0 fcx "$T/p" /dev/null -u -q 0 --no-dgram-eof 127.0.0.1 "$S_PORT"
  local rc
  wait_exit rc "$S_PID" 10
  assert_equal "$(tail -n +2 "$T/S.port" | tr '\n' ' ')" "5 timeout "
}

@test "--no-dgram-eof: zero-length datagrams are ignored, the receiver outlives its sender" {
  need python3
  fc_listen L -u --no-dgram-eof
  run -0 timeout 20 python3 -c '
import socket, sys
addr = ("127.0.0.1", int(sys.argv[1]))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"a\n", addr); s.sendto(b"", addr); s.sendto(b"b\n", addr)' "$L_PORT"
  wait_for_size "$T/L.out" 4
  sleep 1
  is_alive "$L_PID" || fail "the receiver ended although --no-dgram-eof: $(cat "$T/L.err")"
  assert_equal "$(cat "$T/L.out")" "a
b"
  kill -TERM "$L_PID"
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 1"
}

@test "--no-dgram-eof on both ends: -q 1 ends the client, -w 1 (idle) ends the listener; data intact" {
  local rc
  mkpayload "$T/p" 100000
  fc_listen L -u --no-dgram-eof -w 1
  run -0 fcx "$T/p" "$T/c.out" -u --no-dgram-eof -q 1 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 4"
  grep -qx 'fastcat: idle for 1 s (-w), giving up' "$T/L.err" || fail "stderr: $(cat "$T/L.err")"
  assert_same_bytes "$T/p" "$T/L.out"
}

# ------------------------------------------------------------ --dgram-size

@test "--dgram-size 1024: stdin arriving in 700-byte pieces is sent as 9 x 1024 + 784 (strace, JSON)" {
  need python3
  command -v strace >/dev/null || skip "strace not installed"
  mkpayload "$T/p" 10000
  mkfifo "$T/fifo"
  fc_listen L -u --report=json
  bg_start FEED /dev/null "$T/fifo" python3 -c '
import sys, time
data = open(sys.argv[1], "rb").read()
for i in range(0, len(data), 700):
    sys.stdout.buffer.write(data[i:i + 700]); sys.stdout.flush(); time.sleep(0.003)' "$T/p"
  FC_TIMEOUT=30 run -0 --separate-stderr io "$T/fifo" "$T/c.out" \
    "${STRACE[@]}" -f -qq -s 0 -o "$T/tr" -e trace=sendto,sendmsg,sendmmsg,write,writev \
    "$FASTCAT" -u --dgram-size 1024 --report=json 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 10
  assert_same_bytes "$T/p" "$T/L.out"
  # sizes of the datagrams written to the socket (fd >= 3), in order; the
  # last one is the zero-length EOF datagram
  run -0 perl -ne '
    s/^\d+\s+//;
    if (/^sendmmsg\(/) { push @n, /msg_len=(\d+)/g; next }
    push @n, $3 if /^(write|writev|sendto|sendmsg)\((\d+),.*\)\s+=\s+(\d+)/ && $2 >= 3;
    END { print join(" ", @n), "\n" }' "$T/tr"
  assert_output "1024 1024 1024 1024 1024 1024 1024 1024 1024 784 0"
  local c
  c=$(json_report "$T/c.err")
  jq_is "$c" .sent.datagrams 10
  jq_is "$c" .sent.bytes 10000
  jq_is "$c" .sent.max_write 1024
  jq_is "$(json_report "$T/L.err")" .received.max_read 1024
}

# ------------------------------------------------------------ datagram sizes

@test "a 20,000-byte UDP datagram arrives whole (python sender, JSON max_read, no truncation)" {
  need python3
  mkpayload "$T/p" 20000
  fc_listen L -u --report=json
  run -0 timeout 20 python3 -c '
import socket, sys
addr = ("127.0.0.1", int(sys.argv[1]))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
s.sendto(open(sys.argv[2], "rb").read(), addr); s.sendto(b"", addr)
s.recv(65535)' "$L_PORT" "$T/p"
  local rc l
  listener_ok 10
  assert_same_bytes "$T/p" "$T/L.out"
  l=$(json_report "$T/L.err")
  jq_is "$l" .received.max_read 20000
  jq_is "$l" .received.truncated 0
  ! grep -q '^fastcat: warning: .*truncated' "$T/L.err" || fail "truncation warning: $(cat "$T/L.err")"
}

@test "a unix datagram larger than the receive buffer is counted as truncated (warning line, JSON)" {
  need python3
  mkpayload "$T/p" 300000
  fc_ulisten L -- -Uu -B 4096 --report=json
  run -0 timeout 20 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 32, 4 << 20)   # SO_SNDBUFFORCE (root): room for 300000 B
s.bind("")                                      # autobind, so the EOF can come back
s.settimeout(10)
s.connect(sys.argv[1])
s.send(open(sys.argv[2], "rb").read()); s.send(b"")
s.recv(65536)' "$L_PATH" "$T/p"
  local rc l m
  listener_ok 10
  if ! grep -q 'truncated' "$T/L.err" && (( $(stat -c %s "$T/L.out") == 300000 )); then
    skip "the receive buffer holds 300000 B here (contract: at least 256 KiB); no truncation"
  fi
  m=$(sed -nE 's/^fastcat: warning: 1 datagrams truncated \(larger than the ([0-9]+)-byte receive buffer\)$/\1/p' "$T/L.err")
  [[ -n $m ]] || fail "no truncation warning line: $(cat "$T/L.err")"
  (( m >= 262144 && m < 300000 )) || fail "receive buffer $m"
  l=$(json_report "$T/L.err")
  jq_is "$l" .received.truncated 1
  jq_true "$l" ".received.max_read <= $m"
  (( $(stat -c %s "$T/L.out") <= m )) || fail "more than $m bytes written"
}

@test "-u -B 65520 to 127.0.0.1: 'a datagram of 65520 bytes is too large for udp (Message too long)', exit 1" {
  mkpayload "$T/p" 65520
  fc_listen L -u
  run -1 --separate-stderr fcx "$T/p" "$T/c.out" -u -B 65520 127.0.0.1 "$L_PORT"
  assert_equal "$stderr" "fastcat: send to 127.0.0.1:$L_PORT: a datagram of 65520 bytes is too large for udp (Message too long); lower -B or --dgram-size"
  run -1 --separate-stderr fcx "$T/p" "$T/c.out" -u --dgram-size 65520 127.0.0.1 "$L_PORT"
  assert_equal "$stderr" "fastcat: send to 127.0.0.1:$L_PORT: a datagram of 65520 bytes is too large for udp (Message too long); lower -B or --dgram-size"
}

@test "-u -B 1M and -u --dgram-size 65528: usage error, exit 2" {
  run -2 --separate-stderr timeout 10 "$FASTCAT" -u -B 1M 127.0.0.1 9 </dev/null
  assert_equal "$stderr" "fastcat: -B 1M: a UDP datagram holds at most 65527 bytes (65507 over IPv4)"
  assert_equal "stdout: '$output'" "stdout: ''"
  run -2 --separate-stderr timeout 10 "$FASTCAT" -u --dgram-size 65528 127.0.0.1 9 </dev/null
  assert_equal "$stderr" "fastcat: --dgram-size 65528: a UDP datagram holds at most 65527 bytes (65507 over IPv4)"
  run -2 --separate-stderr timeout 10 "$FASTCAT" -l -u -B 1M 127.0.0.1 0 </dev/null
  assert_equal "$stderr" "fastcat: -B 1M: a UDP datagram holds at most 65527 bytes (65507 over IPv4)"
}

# ------------------------------------------------------------ interop

# nc.openbsd -u reads at most 16384 bytes per datagram (fastcat sends with
# -B 8192 to it), and stops receiving once its own stdin has ended (it shuts
# the socket down both ways), so its stdin is a FIFO held open until it has
# received everything.

@test "nc.openbsd -u sends to fastcat -u -l (which answers); nc sends no EOF: -q ends fastcat, exit 0" {
  need nc.openbsd
  local a=$BATS_FILE_TMPDIR/a b=$BATS_FILE_TMPDIR/b rc
  fc_listen L --in "$a" -u -B 8192 -q 3
  mkfifo "$T/nin"
  feed_fifo FEED "$T/nin" "$b" "$T/nc.out" 30000
  run -0 io "$T/nin" "$T/nc.out" nc.openbsd -u -q 1 127.0.0.1 "$L_PORT"
  listener_ok 10
  assert_same_bytes "$b" "$T/L.out"     # nc -> fastcat
  assert_same_bytes "$a" "$T/nc.out"    # fastcat -> nc
}

@test "fastcat -u sends to nc.openbsd -u -l (which answers); fastcat -q 2 ends without nc's EOF" {
  need nc.openbsd
  local a=$BATS_FILE_TMPDIR/a b=$BATS_FILE_TMPDIR/b rc
  mkfifo "$T/nin"
  feed_fifo FEED "$T/nin" "$b" "$T/N.out" 30000
  bg_listen N "$T/nin" "$T/N.out" '^Bound on .* ([0-9]+)$' nc.openbsd -l -v -u -q 1 127.0.0.1 0
  run -0 fcx "$a" "$T/fc.out" -u -B 8192 -q 2 127.0.0.1 "$N_PORT"
  wait_exit rc "$N_PID" 10
  assert_equal "nc exit $rc" "nc exit 0"
  assert_same_bytes "$a" "$T/N.out"     # fastcat -> nc
  assert_same_bytes "$b" "$T/fc.out"    # nc -> fastcat
}

@test "socat UDP-LISTEN (null-eof, shut-null) <-> fastcat -u: both directions byte-exact, EOF both ways" {
  need socat
  local a=$BATS_FILE_TMPDIR/a b=$BATS_FILE_TMPDIR/b rc
  bg_listen S "$b" "$T/S.out" 'listening on UDP AF=[0-9]+ .*:([0-9]+)$' \
    socat -d -d -b 65536 -t 10 UDP-LISTEN:0,bind=127.0.0.1,null-eof,shut-null STDIO
  run -0 fcx "$a" "$T/fc.out" -u 127.0.0.1 "$S_PORT"
  wait_exit rc "$S_PID" 15
  assert_equal "socat exit $rc" "socat exit 0"
  assert_same_bytes "$a" "$T/S.out"
  assert_same_bytes "$b" "$T/fc.out"
}

@test "socat UDP-SENDTO (shut-null, null-eof) <-> fastcat -u -l: both directions byte-exact, EOF both ways" {
  need socat
  local a=$BATS_FILE_TMPDIR/a b=$BATS_FILE_TMPDIR/b rc
  fc_listen L --in "$a" -u
  run -0 io "$b" "$T/so.out" socat -b 65536 -t 10 STDIO "UDP-SENDTO:127.0.0.1:$L_PORT,shut-null,null-eof"
  listener_ok 10
  assert_same_bytes "$b" "$T/L.out"
  assert_same_bytes "$a" "$T/so.out"
}

@test "socat -u - UDP-SENDTO with a 20,000-byte datagram (-b 65536) and shut-null: fastcat -u -l gets it whole, exits 0" {
  need socat
  mkpayload "$T/p" 20000
  fc_listen L -u --report=json
  run -0 io "$T/p" /dev/null socat -b 65536 -u - "UDP-SENDTO:127.0.0.1:$L_PORT,shut-null"
  listener_ok 10
  assert_same_bytes "$T/p" "$T/L.out"
  jq_is "$(json_report "$T/L.err")" .received.max_read 20000
}
