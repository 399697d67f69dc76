#!/usr/bin/env bats
# verify.bats - --verify: both ends confirm the byte count and XXH64 of each
# direction (doc/verify-protocol.md). A verified transfer exits 0 at both ends
# with byte-exact output; a corrupted one exits 6, a cut one 5, at BOTH ends;
# a peer without --verify is refused (6) before any of its frames reach stdout.
#
# Faults are made by a small python3 TCP proxy (started per test on 127.0.0.1
# port 0, killed by PID in teardown) between the two ends: it flips a bit, cuts
# the stream, or passes the first bytes on one at a time.

load helpers


setup_file() {
  # proxy.py MODE N PORT: accept one client on 127.0.0.1 port 0 (printed on
  # stdout), connect it to 127.0.0.1:PORT and relay both ways. The client ->
  # server direction (the data) is tampered with:
  #   flip N     XOR 0x10 into stream byte N (0-based)
  #   cut N      pass the first N bytes, then FIN to the server and read no more
  #              from the client; once the server is done, close the client
  #   dribble N  pass the first N bytes one at a time, 10 ms apart (TCP_NODELAY)
  # A reset from one side is passed on as a reset.
  # The interpreter is resolved once: a python3 that is a wrapper script
  # (pyenv's shim) can take a second to start, every time.
  PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || PY=
  export PY
  mkpayload "$BATS_FILE_TMPDIR/A8" 8388608
  cat >"$BATS_FILE_TMPDIR/proxy.py" <<'EOF'
import socket, struct, sys, threading, time
mode, n, target = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
print(ls.getsockname()[1], flush=True)
c, _ = ls.accept()
s = socket.create_connection(("127.0.0.1", target))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def log(*a): print("proxy:", *a, file=sys.stderr, flush=True)
def reset(sock):
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    except OSError: pass
def up():
    off = 0
    try:
        while True:
            b = c.recv(65536)
            if not b: break
            if mode == "flip" and off <= n < off + len(b):
                b = bytearray(b); b[n - off] ^= 0x10; b = bytes(b)
                log("flipped a bit of byte", n)
            if mode == "cut" and off + len(b) >= n:
                s.sendall(b[:n - off]); log("cut after", n, "bytes")
                s.shutdown(socket.SHUT_WR)
                return
            while mode == "dribble" and off < n and b:
                s.sendall(b[:1]); b = b[1:]; off += 1; time.sleep(0.01)
            s.sendall(b); off += len(b)
        s.shutdown(socket.SHUT_WR)
    except OSError as e:
        log("client -> server:", e); reset(s)
def down():
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            c.sendall(b)
        c.shutdown(socket.SHUT_WR)
    except OSError as e:
        log("server -> client:", e); reset(c)
t = threading.Thread(target=up, daemon=True); t.start(); down()
if mode == "cut": c.close()
t.join()
EOF
}

setup() {
  T=$BATS_TEST_TMPDIR
  A8=$BATS_FILE_TMPDIR/A8   # 8 MiB, shared (read only)
}

# ------------------------------------------------------------------ helpers

# vclient NAME IN OUT [options...] PORT|PATH: a fastcat client with --verify in
# the background (stderr in NAME.err), to 127.0.0.1 unless -U is among the
# options.
vclient() {
  local name=$1 in=$2 out=$3 a=("${@:4}") host=(127.0.0.1)
  [[ " ${a[*]} " == *" -U "* ]] && host=()
  bg_start "$name" "$in" "$out" "$FASTCAT" --verify "${a[@]:0:${#a[@]}-1}" "${host[@]}" "${a[-1]}"
}

# ends_exit LISTENER CLIENT [SECS]: wait for C_PID and L_PID (or $CPID and
# $LPID if set) and assert both exit statuses in one comparison.
ends_exit() {
  local lrc crc lpid=${LPID:-$L_PID} cpid=${CPID:-$C_PID}
  wait_exit crc "$cpid" "${3:-30}" || true
  wait_exit lrc "$lpid" "${3:-30}" || true
  assert_equal "listener exit $lrc, client exit $crc" "listener exit $1, client exit $2"
}

# only_line FILE ERE: FILE (stderr of an end run without -v) is exactly one
# line, and it matches ^ERE$.
only_line() {
  local n
  n=$(wc -l <"$1")
  [[ $n == 1 ]] || fail "${1##*/}: $n lines, expected one:
$(cat "$1")"
  grep -Eqx -- "$2" "$1" || fail "${1##*/}: not /^$2\$/: $(cat "$1")"
}

# last_line FILE ERE: the last line of FILE (an end run with -v) matches ^ERE$,
# and the line before it ends the report (the error is one line): the
# summary line, the JSON line, or for tcp the "tcp:" line or -v's hint.
last_line() {
  local last prev
  last=$(tail -n 1 "$1")
  prev=$(tail -n 2 "$1" | head -n 1)
  grep -Eqx -- "$2" <<<"$last" || fail "${1##*/}: last line not /^$2\$/:
$(tail -n 5 "$1")"
  grep -Eq '^(fastcat: (tcp|udp|unix|unix-dgram|unix-seqpacket) .* -> |fastcat: (tcp|hint): |\{"fastcat":)' <<<"$prev" ||
    fail "${1##*/}: the line before the error is not the report's last: '$prev'"
}

# report_xxh64 FILE sent|received: the digest in the human report's line.
report_xxh64() {
  sed -nE "s/^fastcat: $2 [0-9]+ bytes .*; xxh64 ([0-9a-f]{16})\$/\\1/p" "$1" | tail -n 1
}

# is_prefix SHORT LONG: SHORT is a proper prefix of LONG.
is_prefix() {
  local n
  n=$(stat -c %s "$1")
  (( n < $(stat -c %s "$2") )) || fail "${1##*/} ($n B) is not shorter than ${2##*/}"
  cmp -s -n "$n" "$1" "$2" || fail "${1##*/} is not a prefix of ${2##*/}"
}

# start_proxy MODE N PORT: proxy.py in the background; sets PX_PID, PX_PORT.
start_proxy() {
  [[ -n ${PY:-} ]] || skip "python3 needed for the tampering proxy"
  bg_start PX /dev/null "$T/px.port" "$PY" "$BATS_FILE_TMPDIR/proxy.py" "$@"
  wait_for_line "$T/px.port" '^[0-9]+$' "$PX_PID"
  PX_PORT=$(head -n 1 "$T/px.port")
}

# ------------------------------------------------------------- verified

@test "tcp, 8 MiB one way: both exit 0, byte-exact, 'verified' in the report, JSON verified:true, equal xxh64" {
  ln "$A8" "$T/A" 2>/dev/null || cp "$A8" "$T/A"
  fc_listen L -- --verify
  vclient C "$T/A" "$T/c.out" --report=json "$L_PORT"
  ends_exit 0 0
  assert_same_bytes "$T/A" "$T/L.out"
  assert_equal "client stdout $(stat -c %s "$T/c.out") B" "client stdout 0 B"
  grep -qx 'fastcat: verified: the peer confirmed the 0 bytes sent, and the 8388608 bytes received match what it sent' "$T/L.err" ||
    fail "no verified line in the listener's report: $(cat "$T/L.err")"
  local j got sent want
  j=$(json_report "$T/C.err")
  jq_is "$j" '[.verified, .exit_status, .error, .sent.bytes, .received.bytes] | map(tostring) | join(" ")' \
    "true 0 null 8388608 0"
  sent=$(jq -r .sent.xxh64 <<<"$j")
  got=$(report_xxh64 "$T/L.err" received)
  [[ $sent =~ ^[0-9a-f]{16}$ ]] || fail "client JSON sent.xxh64: '$sent'"
  assert_equal "listener received xxh64 $got" "listener received xxh64 $sent"
  want=$(xxh64_of "$T/A")
  if [[ -n $want ]]; then
    assert_equal "xxh64 $sent" "xxh64 $want"
  fi
}

@test "both directions at once: each end gets the other's file byte-exact, both verified" {
  mkpayload "$T/A" 5000001
  mkpayload "$T/B" 3000017
  fc_listen L --in "$T/B" -- --verify
  vclient C "$T/A" "$T/c.out" -v "$L_PORT"
  ends_exit 0 0
  assert_same_bytes "$T/A" "$T/L.out"
  assert_same_bytes "$T/B" "$T/c.out"
  grep -qx 'fastcat: verified: the peer confirmed the 3000017 bytes sent, and the 5000001 bytes received match what it sent' "$T/L.err" ||
    fail "listener: $(cat "$T/L.err")"
  grep -qx 'fastcat: verified: the peer confirmed the 5000001 bytes sent, and the 3000017 bytes received match what it sent' "$T/C.err" ||
    fail "client: $(cat "$T/C.err")"
}

@test "empty input both ways: verified, 0 bytes, the digest of nothing" {
  fc_listen L -- --verify --report=json
  vclient C /dev/null "$T/c.out" --report=json "$L_PORT"
  ends_exit 0 0
  assert_equal "stdout sizes $(stat -c %s "$T/L.out") $(stat -c %s "$T/c.out")" "stdout sizes 0 0"
  local f j
  for f in L C; do
    j=$(json_report "$T/$f.err")
    jq_is "$j" '[.verified, .sent.bytes, .received.bytes, .sent.xxh64, .received.xxh64] | map(tostring) | join(" ")' \
      "true 0 0 ef46db3751d8e999 ef46db3751d8e999"
  done
}

@test "-B 1 at both ends (a 9-byte frame per payload byte, headers read a byte at a time), and -B 13 to -B 7" {
  mkpayload "$T/A" 301
  fc_listen L -- --verify -B 1
  vclient C "$T/A" "$T/c.out" -B 1 --report=json "$L_PORT"
  ends_exit 0 0
  assert_same_bytes "$T/A" "$T/L.out"
  # one stdin read per byte, one frame per read
  jq_true "$(json_report "$T/C.err")" '.verified and .sent.reads >= 301 and .sent.max_read == 1'
  # frame boundaries that never line up with the receiver's reads
  mkpayload "$T/B" 5003
  fc_listen L2 -- --verify -B 7
  vclient C2 "$T/B" "$T/c2.out" -B 13 "$L2_PORT"
  LPID=$L2_PID CPID=$C2_PID ends_exit 0 0
  assert_same_bytes "$T/B" "$T/L2.out"
}

@test "64 MiB from a pipe (short, uneven reads) with -B 1M at both ends: verified, byte-exact" {
  mkpayload "$T/A" 67108864
  mkfifo "$T/pipe"
  fc_listen L -- --verify -B 1M
  bg_start CAT "$T/A" "$T/pipe" cat
  vclient C "$T/pipe" "$T/c.out" -B 1M -v "$L_PORT"
  ends_exit 0 0 60
  cmp "$T/A" "$T/L.out" || fail "the 64 MiB arrived changed: $(stat -c %s "$T/L.out") B"
  grep -qx 'fastcat: verified: the peer confirmed the 67108864 bytes sent, and the 0 bytes received match what it sent' "$T/C.err" ||
    fail "client: $(cat "$T/C.err")"
}

@test "unix stream and unix-seqpacket, both ways: verified, byte-exact" {
  mkpayload "$T/A" 2000037
  mkpayload "$T/B" 500003
  local tr name
  for tr in unix unix-seqpacket; do
    name=${tr//-/_}
    fc_ulisten "L$name" --in "$T/B" -- -U --transport "$tr" --verify
    vclient "C$name" "$T/A" "$T/c$name.out" -U --transport "$tr" -v "$(eval echo "\$L${name}_PATH")"
    LPID=$(eval echo "\$L${name}_PID") CPID=$(eval echo "\$C${name}_PID") ends_exit 0 0
    assert_same_bytes "$T/A" "$T/L$name.out"
    assert_same_bytes "$T/B" "$T/c$name.out"
    grep -q '^fastcat: verified: ' "$T/L$name.err" || fail "$tr listener: $(cat "$T/L$name.err")"
    grep -q '^fastcat: verified: ' "$T/C$name.err" || fail "$tr client: $(cat "$T/C$name.err")"
  done
}

@test "-d at the receiver (its stdin not sent, hello/END/VERDICT are), --send-only at a sender (data dropped, still verified)" {
  mkpayload "$T/A" 2000000
  mkpayload "$T/B" 1500000
  echo "must not be sent" >"$T/notsent"
  fc_listen L --in "$T/notsent" -- --verify -d
  vclient C "$T/A" "$T/c.out" -v "$L_PORT"
  ends_exit 0 0
  assert_same_bytes "$T/A" "$T/L.out"
  assert_equal "client stdout $(stat -c %s "$T/c.out") B" "client stdout 0 B"
  grep -qx 'fastcat: verified: the peer confirmed the 2000000 bytes sent, and the 0 bytes received match what it sent' "$T/C.err" ||
    fail "client: $(cat "$T/C.err")"
  grep -qx 'fastcat: verified: the peer confirmed the 0 bytes sent, and the 2000000 bytes received match what it sent' "$T/L.err" ||
    fail "listener: $(cat "$T/L.err")"

  fc_listen L2 --in "$T/B" -- --verify
  vclient C2 "$T/A" "$T/c2.out" --send-only -v "$L2_PORT"
  LPID=$L2_PID CPID=$C2_PID ends_exit 0 0
  assert_same_bytes "$T/A" "$T/L2.out"
  assert_equal "--send-only client stdout $(stat -c %s "$T/c2.out") B" "--send-only client stdout 0 B"
  grep -qx 'fastcat: verified: the peer confirmed the 2000000 bytes sent, and the 1500000 bytes received match what it sent' "$T/C2.err" ||
    fail "client: $(cat "$T/C2.err")"
  grep -qx 'fastcat: verified: the peer confirmed the 1500000 bytes sent, and the 2000000 bytes received match what it sent' "$T/L2.err" ||
    fail "listener: $(cat "$T/L2.err")"
}

@test "-k listener with --verify: three clients in a row, each verified at both ends" {
  local i rc
  fc_listen L -- --verify -k
  : >"$T/all"
  for i in 1 2 3; do
    mkpayload "$T/A$i" $((i * 100003))
    cat "$T/A$i" >>"$T/all"
    vclient C$i "$T/A$i" "$T/c$i.out" -v "$L_PORT"
    wait_exit rc "$(eval echo "\$C${i}_PID")" 30
    assert_equal "client $i exit $rc" "client $i exit 0"
    grep -qx "fastcat: verified: the peer confirmed the $((i * 100003)) bytes sent, and the 0 bytes received match what it sent" "$T/C$i.err" ||
      fail "client $i: $(cat "$T/C$i.err")"
  done
  wait_for_count "$T/L.err" '^fastcat: verified: ' 3 "$L_PID"
  for i in 1 2 3; do
    grep -qx "fastcat: verified: the peer confirmed the 0 bytes sent, and the $((i * 100003)) bytes received match what it sent" "$T/L.err" ||
      fail "listener, client $i: $(cat "$T/L.err")"
  done
  is_alive "$L_PID" || fail "the -k listener exited"
  wait_for_size "$T/L.out" "$(stat -c %s "$T/all")"
  assert_same_bytes "$T/all" "$T/L.out"
}

# ------------------------------------------------------------- failures

# --verify tells, it does not repair: the receiver has already written the
# corrupted byte to stdout by the time the END frame shows the mismatch.
@test "one bit flipped on the way (proxy): both ends exit 6 naming counts and digests; stdout keeps the bad byte" {
  mkpayload "$T/A" 2097152
  fc_listen L -- --verify --report=json
  start_proxy flip 100000 "$L_PORT"
  vclient C "$T/A" "$T/c.out" "$PX_PORT"
  ends_exit 6 6
  local d='([0-9a-f]{16})' good bad
  last_line "$T/L.err" "fastcat: --verify: received 2097152 bytes \\(xxh64 $d\\) but the peer sent 2097152 \\(xxh64 $d\\)"
  only_line "$T/C.err" "fastcat: --verify: sent 2097152 bytes \\(xxh64 $d\\) but the peer wrote 2097152 \\(xxh64 $d\\)"
  # the two ends name the same pair of digests: the true one and the corrupted one
  bad=$(sed -nE "s/.*received 2097152 bytes \\(xxh64 $d\\) but the peer sent 2097152 \\(xxh64 $d\\)\$/\\1/p" "$T/L.err")
  good=$(sed -nE "s/.*received 2097152 bytes \\(xxh64 $d\\) but the peer sent 2097152 \\(xxh64 $d\\)\$/\\2/p" "$T/L.err")
  [[ $good != "$bad" ]] || fail "the digests are equal: $good"
  grep -qx "fastcat: --verify: sent 2097152 bytes (xxh64 $good) but the peer wrote 2097152 (xxh64 $bad)" "$T/C.err" ||
    fail "client's digests differ from the listener's ($good, $bad): $(cat "$T/C.err")"
  if [[ -n $(xxh64_of "$T/A") ]]; then
    assert_equal "true xxh64 $good" "true xxh64 $(xxh64_of "$T/A")"
    assert_equal "corrupted xxh64 $bad" "corrupted xxh64 $(xxh64_of "$T/L.out")"
  fi
  jq_is "$(json_report "$T/L.err")" '[.verified, .exit_status] | map(tostring) | join(" ")' "false 6"
  # the receiver's stdout: all bytes, exactly one of them with bit 0x10 flipped
  assert_equal "$(stat -c %s "$T/L.out")" 2097152
  run -1 cmp -l "$T/A" "$T/L.out"
  assert_equal "${#lines[@]} differing byte(s)" "1 differing byte(s)"
  local a b
  read -r _ a b <<<"${lines[0]}"
  assert_equal "xor $(( 8#$a ^ 8#$b ))" "xor 16"
}

@test "stream cut after 1 MB (proxy closes gracefully): receiver 5 'ended early', sender 5" {
  ln "$A8" "$T/A" 2>/dev/null || cp "$A8" "$T/A"
  fc_listen L -- --verify
  start_proxy cut 1000000 "$L_PORT"
  vclient C "$T/A" "$T/c.out" "$PX_PORT"
  ends_exit 5 5
  last_line "$T/L.err" "fastcat: --verify: the peer's data ended early, without its end mark \\($(stat -c %s "$T/L.out") bytes received\\)"
  is_prefix "$T/L.out" "$T/A"
  only_line "$T/C.err" "fastcat: (send to 127\\.0\\.0\\.1:$PX_PORT: (Broken pipe|Connection reset by peer) \\([0-9]+ bytes read from stdin not sent\\)|receive from 127\\.0\\.0\\.1:$PX_PORT: Connection reset by peer|--verify: the peer did not confirm the 8388608 bytes sent to it)"
}

# Plain TCP cannot tell a killed sender from one that finished: the receiver
# sees an orderly FIN either way and exits 0. Only --verify's END tells.
@test "sender killed (SIGKILL) mid-transfer: the --verify receiver exits 5 'ended early'; without --verify it exits 0 (verified:null)" {
  command -v pv >/dev/null || skip "pv not installed"
  ln "$A8" "$T/A" 2>/dev/null || cp "$A8" "$T/A"
  mkfifo "$T/slow" "$T/slow2"
  fc_listen L -- --verify
  bg_start PV "$T/A" "$T/slow" pv -q -L 1m
  vclient C "$T/slow" "$T/c.out" "$L_PORT"
  wait_for_size "$T/L.out" 200000
  kill -KILL "$C_PID"
  ends_exit 5 137
  last_line "$T/L.err" "fastcat: --verify: the peer's data ended early, without its end mark \\($(stat -c %s "$T/L.out") bytes received\\)"
  is_prefix "$T/L.out" "$T/A"
  # the same without --verify: indistinguishable from a clean end (and the
  # JSON report has "verified":null)
  fc_listen L2 -- --report=json
  bg_start PV2 "$T/A" "$T/slow2" pv -q -L 1m
  bg_start C2 "$T/slow2" "$T/c2.out" "$FASTCAT" 127.0.0.1 "$L2_PORT"
  wait_for_size "$T/L2.out" 200000
  kill -KILL "$C2_PID"
  LPID=$L2_PID CPID=$C2_PID ends_exit 0 137
  is_prefix "$T/L2.out" "$T/A"
  jq_is "$(json_report "$T/L2.err")" '[.verified, .exit_status] | map(tostring) | join(" ")' "null 0"
}

# A receiver that dies, or fails on its first write to stdout and resets, never
# sends its VERDICT; the sender reports the reset or broken pipe (5), which is
# what happened to it.
@test "receiver killed (SIGKILL) mid-transfer, or its stdout fails (> /dev/full, exit 7): the sender exits 5" {
  command -v pv >/dev/null || skip "pv not installed"
  local sender_err
  mkfifo "$T/slow"
  fc_listen L -- --verify
  bg_start PV "$A8" "$T/slow" pv -q -L 1m
  vclient C "$T/slow" "$T/c.out" "$L_PORT"
  wait_for_size "$T/L.out" 200000
  kill -KILL "$L_PID"
  ends_exit 137 5
  sender_err="fastcat: (send to 127\\.0\\.0\\.1:$L_PORT: (Broken pipe|Connection reset by peer) \\([0-9]+ bytes read from stdin not sent\\)|receive from 127\\.0\\.0\\.1:$L_PORT: Connection reset by peer)"
  only_line "$T/C.err" "$sender_err"

  fc_listen L2 --out /dev/full -- --verify
  vclient C2 "$A8" "$T/c2.out" "$L2_PORT"
  LPID=$L2_PID CPID=$C2_PID ends_exit 7 5
  last_line "$T/L2.err" 'fastcat: write stdout: No space left on device'
  only_line "$T/C2.err" "${sender_err//$L_PORT/$L2_PORT}"
}

# -------------------------------------------------- a peer without --verify

# The plain end's stdin is held open (a FIFO nobody writes): it sends neither
# data nor EOF, so the --verify end's hello arrives first, as it normally does.
# (When the plain end's data or EOF comes first, see the next test.)
@test "one end without --verify (either side, or stock nc): --verify ends and plain fastcat exit 6, no stdout, messages name --verify" {
  mkpayload "$T/A" 100000
  mkfifo "$T/held" "$T/held2"
  hold_open HOLD "$T/held" 30
  hold_open HOLD2 "$T/held2" 30
  # plain listener, --verify client
  fc_listen L --in "$T/held"
  vclient C "$T/A" "$T/c.out" "$L_PORT"
  ends_exit 6 6
  last_line "$T/L.err" 'fastcat: --verify: the peer sends --verify frames; give --verify at this end too'
  only_line "$T/C.err" 'fastcat: --verify: the peer closed without the verify hello \(is --verify given at both ends\?\)'
  assert_equal "stdout sizes: listener $(stat -c %s "$T/L.out"), client $(stat -c %s "$T/c.out")" \
    "stdout sizes: listener 0, client 0"
  # --verify listener, plain client
  fc_listen L2 --in "$T/A" -- --verify
  bg_start C2 "$T/held2" "$T/c2.out" "$FASTCAT" 127.0.0.1 "$L2_PORT"
  LPID=$L2_PID CPID=$C2_PID ends_exit 6 6
  last_line "$T/L2.err" 'fastcat: --verify: the peer closed without the verify hello \(is --verify given at both ends\?\)'
  only_line "$T/C2.err" 'fastcat: --verify: the peer sends --verify frames; give --verify at this end too'
  assert_equal "stdout sizes: listener $(stat -c %s "$T/L2.out"), client $(stat -c %s "$T/c2.out")" \
    "stdout sizes: listener 0, client 0"
  # a stock peer: nc.openbsd -N sends a file to a --verify listener
  command -v nc.openbsd >/dev/null || skip "nc.openbsd not installed"
  fc_listen L3 -- --verify
  bg_start NC "$T/A" "$T/nc.out" timeout 20 nc.openbsd -N 127.0.0.1 "$L3_PORT"
  local rc
  wait_exit rc "$L3_PID" 20
  assert_equal "fastcat exit $rc" "fastcat exit 6"
  last_line "$T/L3.err" 'fastcat: --verify: the peer did not open with the verify hello \(is --verify given at both ends\?\)'
  assert_equal "fastcat stdout $(stat -c %s "$T/L3.out") B" "fastcat stdout 0 B"
  # nc ends by itself (0, or 1 if fastcat's close reset it), it does not hang
  wait_exit rc "$NC_PID" 20
  [[ $rc == 0 || $rc == 1 ]] || fail "nc exit $rc"
}

# The --verify end must get its hello out even when it fails at once on what
# the plain peer sent first (its data, or its EOF): else the plain end never
# sees the hello and exits 0 with nothing, or 5 on the reset, instead of
# refusing with 6. strace delays the --verify end's connect/accept by 0.3 s so
# that the plain peer's bytes are always there first.
@test "the --verify end's hello goes out even when the plain peer's data or EOF is there first: both exit 6" {
  command -v strace >/dev/null || skip "strace not installed"
  "${STRACE[@]}" -o /dev/null -e trace=getpid -e inject=getpid:delay_exit=1 true 2>/dev/null ||
    skip "strace cannot inject delays here"
  mkpayload "$T/A" 100000
  # plain listener that sends data; the --verify client starts late
  fc_listen L --in "$T/A"
  bg_start C "$T/A" "$T/c.out" "${STRACE[@]}" -o /dev/null -e trace=connect \
    -e inject=connect:delay_exit=300000 "$FASTCAT" --verify 127.0.0.1 "$L_PORT"
  ends_exit 6 6
  last_line "$T/L.err" 'fastcat: --verify: the peer sends --verify frames; give --verify at this end too'
  only_line "$T/C.err" 'fastcat: --verify: the peer did not open with the verify hello \(is --verify given at both ends\?\)'
  # --verify listener that accepts late; the plain client sends nothing, only its EOF
  bg_listen L2 "$T/A" "$T/L2.out" 'listening on .*:([0-9]+)$' "${STRACE[@]}" -o /dev/null \
    -e trace=accept,accept4 -e inject=accept,accept4:delay_exit=300000 "$FASTCAT" -v -l --verify 127.0.0.1 0
  bg_start C2 /dev/null "$T/c2.out" "$FASTCAT" 127.0.0.1 "$L2_PORT"
  LPID=$L2_PID CPID=$C2_PID ends_exit 6 6
  last_line "$T/L2.err" 'fastcat: --verify: the peer closed without the verify hello \(is --verify given at both ends\?\)'
  only_line "$T/C2.err" 'fastcat: --verify: the peer sends --verify frames; give --verify at this end too'
  assert_equal "stdout sizes: $(stat -c %s "$T/L.out") $(stat -c %s "$T/c2.out")" "stdout sizes: 0 0"
}

# The plain end peeks at the first bytes once; the hello may come in pieces
# (here a proxy passes it on one byte at a time). A prefix of the hello must
# make it wait for the rest, not let the hello through to stdout as data.
@test "plain listener refuses the hello even when it arrives a byte at a time: both 6, listener writes nothing" {
  mkpayload "$T/A" 100000
  fc_listen L
  start_proxy dribble 16 "$L_PORT"
  vclient C "$T/A" "$T/c.out" "$PX_PORT"
  ends_exit 6 6
  last_line "$T/L.err" 'fastcat: --verify: the peer sends --verify frames; give --verify at this end too'
  assert_equal "listener stdout $(stat -c %s "$T/L.out") B: $(head -c 16 "$T/L.out" | tr -c '[:print:]' .)" \
    "listener stdout 0 B: "
}

@test "hello, first header and payload a byte at a time between two --verify ends: verified, byte-exact" {
  mkpayload "$T/A" 200000
  mkpayload "$T/B" 50000
  fc_listen L --in "$T/B" -- --verify
  start_proxy dribble 30 "$L_PORT"
  vclient C "$T/A" "$T/c.out" -v "$PX_PORT"
  ends_exit 0 0
  assert_same_bytes "$T/A" "$T/L.out"
  assert_same_bytes "$T/B" "$T/c.out"
  grep -q '^fastcat: verified: ' "$T/C.err" || fail "client: $(cat "$T/C.err")"
}

# ------------------------------------------------------------ usage errors

# usage_verify ARGS...: fastcat --verify ARGS is a usage error (exit 2) with a
# one-line message naming --verify, and no stdout.
usage_verify() {
  run -2 --separate-stderr timeout 10 "$FASTCAT" --verify "$@" </dev/null
  assert_equal "${#stderr_lines[@]} stderr line(s): $stderr" "1 stderr line(s): $stderr"
  [[ ${stderr_lines[0]} == "fastcat: "*--verify* ]] || fail "does not name --verify: $stderr"
  assert_equal "stdout: '$output'" "stdout: ''"
}

@test "usage: --verify with --copy=splice, or --dgram-size on a stream transport: exit 2, one line naming --verify" {
  usage_verify -U --transport unix-seqpacket --dgram-size 1024 "$T/x.sock"
  [[ $stderr == *"--dgram-size"* ]] || fail "$stderr"
  # the combination is refused the same way whether or not this build has splice
  usage_verify --copy=splice 127.0.0.1 9
  [[ $stderr == *"--copy=splice"* ]] || fail "$stderr"
  usage_verify -l --copy=splice 127.0.0.1 0
}

# ------------------------------------------------- datagrams (udp, unix-dgram)

@test "udp and unix-dgram, 3 MB one way: both ends verified (control datagrams), byte-exact" {
  mkpayload "$T/A" 3000000
  fc_listen L -- -u --verify
  vclient C "$T/A" "$T/c.out" -u -B 8K "$L_PORT"
  ends_exit 0 0
  assert_same_bytes "$T/A" "$T/L.out"
  grep -qx 'fastcat: verified: the peer confirmed the 0 bytes sent, and the 3000000 bytes received match what it sent' "$T/L.err" ||
    fail "no verified line: $(cat "$T/L.err")"
  fc_ulisten L2 -- -Uu --verify
  bg_start C2 "$T/A" "$T/c2.out" "$FASTCAT" --verify -Uu -B 4K --report=json "$L2_PATH"
  LPID=$L2_PID CPID=$C2_PID ends_exit 0 0
  assert_same_bytes "$T/A" "$T/L2.out"
  jq_is "$(json_report "$T/C2.err")" '[.verified, .sent.bytes] | map(tostring) | join(" ")' "true 3000000"
}

@test "udp --verify, both directions and empty input: verified" {
  mkpayload "$T/A" 200000
  mkpayload "$T/B" 300000
  fc_listen L --in "$T/B" -- -u --verify
  vclient C "$T/A" "$T/c.out" -u -B 4K "$L_PORT"
  ends_exit 0 0
  assert_same_bytes "$T/A" "$T/L.out"
  assert_same_bytes "$T/B" "$T/c.out"
  fc_listen L2 -- -u --verify
  bg_start C2 /dev/null "$T/c2.out" "$FASTCAT" --verify -u 127.0.0.1 "$L2_PORT"
  LPID=$L2_PID CPID=$C2_PID ends_exit 0 0
  assert_equal "$(stat -c %s "$T/L2.out")" 0
}

@test "udp -k --verify listener: a stale END, VERDICT or DONE (an earlier session's) is dropped, not taken for the next client" {
  local t rc
  mkpayload "$T/A" 300000
  fc_listen L -- -k -u --verify
  # what an earlier client resends after its session ended: 0xff "FCV", type, version 1, 0, 0
  for t in D V E; do
    case $t in
      D) printf '\377FCVD\001\000\000' ;;
      E) printf '\377FCVE\001\000\000'; head -c 24 /dev/zero ;;
      V) printf '\377FCVV\001\000\000'; head -c 32 /dev/zero ;;
    esac >"$T/stale.$t"
    # one datagram each, from a socket of its own (as the old client's was)
    bash -c 'exec 5>/dev/udp/127.0.0.1/$1 && cat "$2" >&5' _ "$L_PORT" "$T/stale.$t"
  done
  vclient C "$T/A" "$T/c.out" -u -B 8K "$L_PORT"
  wait_exit rc "$C_PID" 30
  assert_equal "client exit $rc" "client exit 0"
  wait_for_size "$T/L.out" 300000
  assert_same_bytes "$T/A" "$T/L.out"
  assert_equal "$(grep -c "dropped an earlier session's --verify control datagram" "$T/L.err")" 3
}

@test "udp: one end without --verify: the --verify end and plain fastcat exit 6, messages name --verify" {
  mkpayload "$T/A" 100000
  # --verify client, plain listener: the listener refuses the hello and says so
  fc_listen L -- -u
  vclient C "$T/A" "$T/c.out" -u "$L_PORT"
  ends_exit 6 6 20
  last_line "$T/L.err" 'fastcat: --verify: the peer sends --verify datagrams; give --verify at this end too'
  only_line "$T/C.err" 'fastcat: --verify: the peer runs without --verify and refused our hello \(give --verify at both ends\)'
  assert_equal "listener stdout $(stat -c %s "$T/L.out")" "listener stdout 0"
  # plain --seq client, --verify listener: nothing written, both told
  fc_listen L2 -- -u --verify
  bg_start C2 "$T/A" "$T/c2.out" "$FASTCAT" -u --seq 127.0.0.1 "$L2_PORT"
  # the plain client reads our hello (6), or its next send finds us gone (5): never 0
  local lrc crc
  wait_exit crc "$C2_PID" 20 || true
  wait_exit lrc "$L2_PID" 20 || true
  assert_equal "listener exit $lrc" "listener exit 6"
  [[ $crc == 5 || $crc == 6 ]] || fail "plain client exit $crc: $(cat "$T/C2.err")"
  last_line "$T/L2.err" "fastcat: --verify: the peer's data came without the verify hello \(is --verify given at both ends\?\)"
  assert_equal "listener stdout $(stat -c %s "$T/L2.out")" "listener stdout 0"
}

@test "udp --verify with nobody listening: exit 3 after -w, one line naming the port" {
  local port
  port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  run --separate-stderr timeout 20 "$FASTCAT" --verify -u -w 1 127.0.0.1 "$port" </dev/null
  assert_equal "exit $status" "exit 3"
  assert_regex "$stderr" '^fastcat: --verify: no answer from 127\.0\.0\.1:[0-9]+ in 1 s: its port is unreachable \(nothing listening\?\)$'
}
