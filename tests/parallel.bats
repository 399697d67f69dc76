#!/usr/bin/env bats
# parallel.bats - -P N: one stream striped over N TCP connections, on loopback:
# byte-exact from files and pipes, plain peers never get protocol bytes, a
# stranger is refused while the session goes on, a lost connection ends both
# ends with exit 5, and the usage errors. (The delayed, lossy lab runs are
# in wanlab.bats.)

load helpers

setup_file() {
  mkpayload "$BATS_FILE_TMPDIR/a.8M" $((8 * 1024 * 1024 + 7))
  mkpayload "$BATS_FILE_TMPDIR/a.1M" 1048577
}

setup() { T=$BATS_TEST_TMPDIR; A=$BATS_FILE_TMPDIR/a.8M; }

# pxfer N [sender options...]: A through a -l -P listener and a -P N sender; both exit 0.
pxfer() {
  local n=$1
  shift
  fc_listen L -P "$n" --report=json "$@"
  run -0 --separate-stderr fcx "$A" "$T/c.out" -P "$n" --report=json "$@" 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
  both_reports
}

@test "-P 2: byte-exact, both exit 0; the receiver reports every byte received, the sender every byte sent" {
  pxfer 2
  jq_is "$LJSON" .received.bytes $((8 * 1024 * 1024 + 7))
  jq_is "$CJSON" .sent.bytes $((8 * 1024 * 1024 + 7))
  jq_is "$CJSON" .received.bytes 0   # one way: the receiver sends nothing back
  run -0 wc -c <"$T/c.out"
  assert_output 0
}

@test "-P 4: the JSON report has a \"streams\" array of 4 TCP_INFO objects at both ends, and the session's \"tcp\" sums them" {
  pxfer 4
  local j
  for j in "$CJSON" "$LJSON"; do
    jq_true "$j" '(.streams | length) == 4'
    jq_true "$j" '[.streams[] | .rtt_ms >= 0 and .cwnd_bytes > 0] | all'
    jq_true "$j" '.tcp.cwnd_bytes == ([.streams[].cwnd_bytes] | add)'
  done
  fc_listen L2 -P 1
  run -0 --separate-stderr fcx "$A" /dev/null -P 4 --report 127.0.0.1 "$L2_PORT"
  [[ $stderr =~ fastcat:\ -P:\ 4\ connections:\ cwnd\ [0-9.]+,\ [0-9.]+,\ [0-9.]+,\ [0-9.]+\ MiB\;\ [0-9]+,\ [0-9]+,\ [0-9]+,\ [0-9]+\ retransmits ]] ||
    fail "no per-connection line in: $stderr"
}

@test "-P 2 -v: the direction a one-way session does not use is a clause, not a line of zeros" {
  fc_listen L -P 2
  run -0 --separate-stderr fcx "$A" "$T/c.out" -v -P 2 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  grep -Eq '^fastcat: sent 8388615 bytes .*; one way, nothing received$' "$T/c.err" || fail "$(cat "$T/c.err")"
  grep -Eq '^fastcat: received 8388615 bytes .*; one way, nothing sent$' "$T/L.err" || fail "$(cat "$T/L.err")"
  ! grep -Eq '^fastcat: (received|sent) 0 bytes' "$T/c.err" "$T/L.err" || fail "a line of zeros"
}

@test "-P 8: byte-exact; -v names 8 connections and one session at both ends" {
  fc_listen L -P 1
  run -0 --separate-stderr fcx "$A" "$T/c.out" -v -P 8 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
  local cs ls
  cs=$(sed -n 's/^fastcat: -P: 8 connections to .*, session \([0-9a-f]*\)$/\1/p' "$T/c.err")
  ls=$(sed -n 's/^fastcat: -P: 8 connections from .*, session \([0-9a-f]*\)$/\1/p' "$T/L.err")
  [[ -n $cs && $cs == "$ls" ]] || fail "no common session id: sender '$cs', receiver '$ls'"
}

@test "-P 4 from a pipe, -B 16k: byte-exact; no read or write of the stream above 16 KiB plus a chunk header" {
  fc_listen L -P 4 --report=json -B 16k
  run -0 --separate-stderr bash -c 'cat "$1" | "$FASTCAT" -P 4 -B 16k --report=json 127.0.0.1 "$2"' _ "$A" "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
  both_reports
  jq_true "$CJSON" '.sent.max_read <= 16384 and .sent.max_write <= 16384 + 16'
  jq_true "$LJSON" '.received.max_write <= 16384'
}

@test "-P 3 --checksum at both ends: the same xxh64 of the whole stream" {
  pxfer 3 --checksum
  local s r
  s=$(jq -r .sent.xxh64 <<<"$CJSON")
  r=$(jq -r .received.xxh64 <<<"$LJSON")
  [[ -n $s && $s == "$r" ]] || fail "sent $s, received $r"
  need xxhsum
  assert_equal "$s" "$(xxh64_of "$A")"
}

@test "-P 4 --verify at both ends: byte-exact, both verified (the receiver's verdict matches what was sent)" {
  pxfer 4 --verify
  jq_is "$CJSON" .verified true
  jq_is "$LJSON" .verified true
  jq_is "$CJSON" .exit_status 0
}

@test "-P 2: --verify at the sender only: the receiver checks the END's digest and answers; both exit 0" {
  fc_listen L -P 2
  run -0 fcx "$A" /dev/null -P 2 --verify --report=json 127.0.0.1 "$L_PORT"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
}

@test "-P 2: --verify at the receiver only: it exits 6 saying the sender did not ask; the sender exits 5" {
  local rc
  fc_listen L -P 2 --verify
  run -5 --separate-stderr fcx "$A" /dev/null -P 2 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 6"
  grep -Fxq 'fastcat: -P --verify: the sender did not ask for --verify (give --verify at both ends)' "$T/L.err" ||
    fail "$(cat "$T/L.err")"
}

@test "-P 4 --rate-limit 2M: the total, not each connection, is limited (4 MiB take at least 1.5 s)" {
  local t0 ms
  A=$BATS_FILE_TMPDIR/a.1M
  head -c 4M /dev/urandom >"$T/a4"
  A=$T/a4
  t0=$(now_us)
  pxfer 4 --rate-limit 2M
  ms=$(elapsed_ms "$t0")
  ((ms >= 1500)) || fail "4 MiB at 2 MiB/s took only $ms ms"
}

@test "-P 8 into a slow stdout: the receiver's reorder memory holds, RSS under 64 MiB; byte-exact" {
  need pv
  [[ -x /usr/bin/time ]] || skip "GNU time (/usr/bin/time) not installed"
  head -c 96M /dev/urandom >"$T/big"
  bg_listen L /dev/null /dev/null 'listening on .*:([0-9]+)$' \
    bash -c '/usr/bin/time -f "rss %M KiB" -o "$1/rss" "$FASTCAT" -v -l -P 1 127.0.0.1 0 | pv -q -L 40m >"$1/L.out"' _ "$T"
  run -0 fcx "$T/big" /dev/null -P 8 127.0.0.1 "$L_PORT"
  listener_ok 60
  assert_same_bytes "$T/big" "$T/L.out"
  local kib
  # under ASan the RSS is its shadow and quarantine more than fastcat's memory
  ldd "$FASTCAT" 2>/dev/null | grep -q libasan && return 0
  kib=$(sed -n 's/^rss \([0-9]*\) KiB$/\1/p' "$T/rss")
  [[ -n $kib ]] || fail "no RSS: $(cat "$T/rss")"
  ((kib <= 64 * 1024)) || fail "receiver RSS $kib KiB"
}

@test "-P 2 and an empty stdin: both exit 0, nothing written" {
  : >"$T/empty"
  A=$T/empty
  pxfer 2
  jq_is "$LJSON" .received.bytes 0
}

@test "a -P sender facing nc.openbsd: exit 3 in -w, one line naming -l -P, not a byte in nc's output" {
  need nc.openbsd
  nc_listen N --out "$T/nc.out"
  run -3 --separate-stderr fcx "$A" /dev/null -P 4 -w 1 127.0.0.1 "$N_PORT"
  assert_equal "$stderr" "fastcat: -P: 127.0.0.1:$N_PORT is not a fastcat -P receiver: no stripe hello in 1 s (give -l -P auto at the other end)"
  kill "$N_PID" 2>/dev/null || true
  run -0 wc -c <"$T/nc.out"
  assert_output 0
}

@test "a -P sender facing nc.openbsd that talks first: exit 3 at once, 'it sent other data first'" {
  need nc.openbsd
  printf 'hello from nc\n' >"$T/nc.in"
  nc_listen N --in "$T/nc.in" --out "$T/nc.out"
  run -3 --separate-stderr fcx "$A" /dev/null -P 4 127.0.0.1 "$N_PORT"
  [[ $stderr == *"is not a fastcat -P receiver: it sent other data first"* ]] || fail "$stderr"
  kill "$N_PID" 2>/dev/null || true
  run -0 wc -c <"$T/nc.out"
  assert_output 0
}

@test "a -P sender facing a plain fastcat listener: exit 3, the plain one writes nothing and does not exit 0" {
  local rc
  fc_listen L
  run -3 --separate-stderr fcx "$A" /dev/null -P 4 -w 2 127.0.0.1 "$L_PORT"
  [[ $stderr == *"is not a fastcat -P receiver"* ]] || fail "$stderr"
  wait_exit rc "$L_PID" 10
  ((rc != 0)) || fail "the plain listener exited 0 after a refused session"
  run -0 wc -c <"$T/L.out"
  assert_output 0
}

@test "a plain fastcat facing a -P listener: exit 3 naming -P, nothing on its stdout; the listener goes on and serves a -P sender" {
  fc_listen L -P 2
  printf 'plain data\n' >"$T/plain"
  run -3 --separate-stderr fcx "$T/plain" "$T/p.out" 127.0.0.1 "$L_PORT"
  assert_equal "$stderr" "fastcat: the peer is a fastcat -P receiver (one stream over several connections); give -P N at this end"
  run -0 wc -c <"$T/p.out"
  assert_output 0
  run -0 fcx "$A" /dev/null -P 2 127.0.0.1 "$L_PORT"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
}

@test "a stranger connecting mid-session is refused; the session completes byte-exact" {
  need nc.openbsd
  fc_listen L -P 1
  bg_start C "$A" "$T/c.out" "$FASTCAT" -P 4 --rate-limit 4M 127.0.0.1 "$L_PORT"
  wait_for_line "$T/L.err" '-P: 4 connections from' "$L_PID" || fail "no session"
  run nc.openbsd -N -w 2 127.0.0.1 "$L_PORT" </dev/null
  ((status != 0)) || fail "the stranger's connect was not refused (nc exit 0)"
  local rc
  wait_exit rc "$C_PID" 30
  assert_equal "sender exit $rc" "sender exit 0"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
}

# auto_session_refused PATTERN: the -P auto session (sender C, listener L) ended well, byte-exact,
# and the listener logged a refusal that matches PATTERN.
auto_session_refused() {
  local rc
  wait_exit rc "$C_PID" 30
  assert_equal "sender exit $rc" "sender exit 0"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
  grep -q -- "$1" "$T/L.err" || fail "no refusal logged: $(cat "$T/L.err")"
}

# stripe_peer PORT MODE [ARG]: a made-up -P sender or stranger, in Python (doc/stripe-protocol.md).
# MODE fixed PAYLOAD: a -P 2 sender whose second connection is first tried from 127.0.0.2 with
# the session's id (it prints "stranger refused" or "stranger taken"), then made from 127.0.0.1;
# the payload goes as two chunks and both ends. MODE join SESSION: a stranger from 127.0.0.2
# that joins an auto session as its connection 2 (prints the same verdict).
stripe_peer() {
  python3 - "$@" <<'PY'
import os, socket, struct, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]

def dial(src):
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    hello = b""
    while len(hello) < 16:
        got = s.recv(16 - len(hello))
        if not got:
            sys.exit("no stripe hello")
        hello += got
    assert hello == b"FASTCAT-STRIPE1\n", hello
    return s

def join(s, count, index, session):
    s.sendall(b"FCSJ\x01\x00" + struct.pack(">HH", count, index) + b"\0\0"
              + struct.pack(">Q", session) + b"\0" * 4)

def refused(s):
    s.settimeout(5)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False

if mode == "join":
    x = dial("127.0.0.2")
    join(x, 0, 1, int(sys.argv[3], 16))
    print("stranger refused" if refused(x) else "stranger taken", flush=True)
    sys.exit(0)
data = open(sys.argv[3], "rb").read()
session = int.from_bytes(os.urandom(8), "big") or 1
c0 = dial("127.0.0.1")
join(c0, 2, 0, session)
time.sleep(0.5)  # the receiver has taken the first join: the session is c0's host's
x = dial("127.0.0.2")
join(x, 2, 1, session)
print("stranger refused" if refused(x) else "stranger taken", flush=True)
c1 = dial("127.0.0.1")
join(c1, 2, 1, session)
half = len(data) // 2
for s, offset, part in ((c0, 0, data[:half]), (c1, half, data[half:])):
    s.sendall(b"D\0\0\0" + struct.pack(">IQ", len(part), offset) + part)
for s in (c0, c1):
    s.sendall(b"E\0" + struct.pack(">HIQ", 2, 8, len(data)) + b"\0" * 8)
    s.shutdown(socket.SHUT_WR)
for s in (c0, c1):
    s.settimeout(10)
    while s.recv(4096):
        pass
PY
}

@test "-P 2: a join from another host with the session's id is refused (-v names it); the session completes byte-exact" {
  fc_listen L -P 1
  run -0 stripe_peer "$L_PORT" fixed "$BATS_FILE_TMPDIR/a.1M"
  assert_output "stranger refused"
  listener_ok 30
  assert_same_bytes "$BATS_FILE_TMPDIR/a.1M" "$T/L.out"
  grep -q -- "-P: refused a connection from 127.0.0.2:[0-9]*: not from the host of the session's first connection" "$T/L.err" ||
    fail "no refusal named: $(cat "$T/L.err")"
}

@test "-P auto: a stranger from 127.0.0.2 that joins with the session's id is refused; the session completes byte-exact" {
  local id
  fc_listen L -P auto
  bg_start C "$A" "$T/c.out" "$FASTCAT" -P auto --rate-limit 4M 127.0.0.1 "$L_PORT"
  wait_for_line "$T/L.err" '-P auto: a session from' "$L_PID" || fail "no session"
  id=$(sed -n 's/^fastcat: -P auto: a session from .*, \([0-9a-f]*\): .*$/\1/p' "$T/L.err")
  [[ -n $id ]] || fail "no session id in: $(cat "$T/L.err")"
  run -0 stripe_peer "$L_PORT" join "$id"
  assert_output "stranger refused"
  auto_session_refused "-P: refused a connection from 127.0.0.2:[0-9]*: not from the host of the session's first connection"
}

@test "-P auto on loopback: one connection, settled at once (a round trip under 1 ms); byte-exact, both ends report 1 stream" {
  fc_listen L -P auto --report=json
  # at 16 MiB/s the 8 MiB last past the first tick (0.25 s), where -P auto decides
  run -0 --separate-stderr fcx "$A" "$T/c.out" -v -P auto --rate-limit 16M --report=json 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
  grep -qx 'fastcat: -P auto: settled at 1 connection: a round trip under 1 ms: one connection.s window fills the path' "$T/c.err" ||
    fail "no settle line: $(cat "$T/c.err")"
  jq_true "$(json_report "$T/c.err")" '(.streams | length) == 1'
  jq_true "$(json_report "$T/L.err")" '(.streams | length) == 1'
  grep -q -- '-P auto: a session from' "$T/L.err" || fail "the receiver did not see an auto session"
}

@test "-P auto session: a stranger connecting mid-session (the receiver still takes joins) is refused; the session completes byte-exact" {
  need nc.openbsd
  fc_listen L -P auto
  bg_start C "$A" "$T/c.out" "$FASTCAT" -P auto --rate-limit 4M 127.0.0.1 "$L_PORT"
  wait_for_line "$T/L.err" '-P auto: a session from' "$L_PID" || fail "no session"
  # it is sent the stripe hello, then says something that is no join: reset, logged
  run bash -c 'printf "GET / HTTP/1.0\r\n\r\n" | nc.openbsd -w 2 127.0.0.1 "$1"' _ "$L_PORT"
  auto_session_refused '-P: refused a connection from 127.0.0.1:[0-9]*: not a -P sender'
}

@test "one connection reset mid-transfer: both ends exit 5 within -w, naming the connection; the receiver says how many bytes it delivered in order" {
  need ss
  local rc lrc sport
  fc_listen L -P 1 -w 3
  bg_start C "$A" "$T/c.out" "$FASTCAT" -P 4 --rate-limit 2M -w 3 127.0.0.1 "$L_PORT"
  wait_for_line "$T/L.err" '-P: 4 connections from' "$L_PID" || fail "no session"
  sleep 0.5
  sport=$(ss -Htn state established "( dport = :$L_PORT )" | awk 'NR == 2 { n = split($3, a, ":"); print a[n] }')
  [[ -n $sport ]] || fail "no second connection in ss"
  ss -K state established "( sport = :$sport )" >/dev/null
  wait_exit rc "$C_PID" 10
  wait_exit lrc "$L_PID" 10
  assert_equal "sender exit $rc, receiver exit $lrc" "sender exit 5, receiver exit 5"
  grep -Eq '^fastcat: -P: connection [1-4] of 4: ' "$T/C.err" || fail "$(cat "$T/C.err")"
  grep -Eq '^fastcat: -P: connection [1-4] of 4: .*; [0-9]+ bytes delivered in order$' "$T/L.err" || fail "$(cat "$T/L.err")"
}

@test "-P usage errors: exit 2, one line each" {
  usage_err "fastcat: -P 0: connections must be 1 to 64, or auto" -P 0 127.0.0.1 1
  usage_err "fastcat: -P 65: connections must be 1 to 64, or auto" -P 65 127.0.0.1 1
  usage_err "fastcat: --parallel x: connections must be 1 to 64, or auto" --parallel x 127.0.0.1 1
  # the next option taken for -P's value (a receiver's -P needs one too)
  usage_err "fastcat: -P --resume: -P takes the connections first (1 to 64, or auto; a receiver takes any: -l -P auto)" -l -P --resume 9000
  usage_err "fastcat: -P needs --transport tcp" -P 2 -u 127.0.0.1 1
  usage_err "fastcat: -P needs --transport tcp" -P 2 -U /tmp/x.sock
  usage_err "fastcat: -P and -d: a striped session is one way, the sender's stdin to the receiver's stdout" -P 2 -d 127.0.0.1 1
}
