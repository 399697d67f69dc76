#!/usr/bin/env bats
# errors.bats - runtime failures: a one-line "fastcat: WHAT: WHY" and the exit status that names
# the kind of failure (3 connect, 4 timeout, 5 peer reset or closed early, 7 writing stdout, 1 other).

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
}

# has_line REGEX TEXT: some line of TEXT matches the (extended) REGEX.
has_line() {
  grep -Eq -- "$1" <<<"$2" || fail "no line matching /$1/ in:
$2"
}

@test "connection refused (IPv4): exit 3, 'connect 127.0.0.1:PORT: Connection refused'" {
  closed_port 127.0.0.1
  run -3 --separate-stderr timeout 20 "$FASTCAT" 127.0.0.1 "$CLOSED_PORT" </dev/null
  assert_equal "$stderr" "fastcat: connect 127.0.0.1:$CLOSED_PORT: Connection refused"
  assert_equal "stdout: '$output'" "stdout: ''"
}

@test "connection refused (IPv6): exit 3, 'connect [::1]:PORT: Connection refused'" {
  skip_unless_ipv6
  closed_port ::1
  run -3 --separate-stderr timeout 20 "$FASTCAT" ::1 "$CLOSED_PORT" </dev/null
  assert_equal "$stderr" "fastcat: connect [::1]:$CLOSED_PORT: Connection refused"
}

@test "unresolvable name (inside unshare -n, no DNS leaves the machine): exit 3, 'resolve HOST: ...'" {
  skip_unless_unshare
  run -3 --separate-stderr timeout 30 unshare -n "$FASTCAT" no-such-host.invalid 1 </dev/null
  has_line '^fastcat: resolve no-such-host\.invalid: [A-Z][a-z]+' "$stderr"
  ! grep -q 'connect' <<<"$stderr" || fail "tried to connect: $stderr"
}

@test "-n with a host name (inside unshare -n): exit 3, resolve error, no connect" {
  skip_unless_unshare
  run -3 --separate-stderr timeout 30 unshare -n "$FASTCAT" -n localhost 1 </dev/null
  has_line '^fastcat: resolve localhost: .+' "$stderr"
  ! grep -q 'connect' <<<"$stderr" || fail "tried to connect: $stderr"
}

@test "connect timeout -w 1: exit 4 after ~1 s, 'timed out after 1 s' (SYN dropped by a full accept queue)" {
  command -v python3 >/dev/null || skip "python3 needed for the full-backlog listener"
  # listener with backlog 0 whose one queue slot is taken and never accepted:
  # the kernel drops further SYNs, so connect() hangs (loopback only)
  bg_start PY /dev/null "$T/py.port" python3 -c '
import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)
c = socket.socket(); c.connect(s.getsockname())
print(s.getsockname()[1], flush=True)
time.sleep(60)'
  wait_for_line "$T/py.port" '^[0-9]+$' "$PY_PID"
  local port start ms
  port=$(cat "$T/py.port")
  start=$(now_us)
  run -4 --separate-stderr timeout 20 "$FASTCAT" -w 1 127.0.0.1 "$port" </dev/null
  ms=$(elapsed_ms "$start")
  assert_equal "$stderr" "fastcat: connect 127.0.0.1:$port: timed out after 1 s"
  (( ms >= 900 && ms < 4000 )) || fail "timed out after $ms ms, expected ~1000"
}

@test "idle timeout -w 1: connected, nothing moves: 'idle for 1 s (-w), giving up', exit 4" {
  mkfifo "$T/lin" "$T/cin"
  hold_open HOLD1 "$T/lin" 30
  hold_open HOLD2 "$T/cin" 30
  fc_listen L --in "$T/lin"
  local start ms rc
  start=$(now_us)
  bg_start C "$T/cin" "$T/c.out" "$FASTCAT" -w 1 127.0.0.1 "$L_PORT"
  wait_exit rc "$C_PID" 10
  ms=$(elapsed_ms "$start")
  assert_equal "client exit $rc" "client exit 4"
  grep -qx 'fastcat: idle for 1 s (-w), giving up' "$T/C.err" || fail "stderr: $(cat "$T/C.err")"
  (( ms >= 900 && ms < 4000 )) || fail "gave up after $ms ms, expected ~1000"
}

@test "-w 1 is not an idle timeout while data keeps moving (pv -L 256k for ~2.5 s)" {
  command -v pv >/dev/null || skip "pv not installed"
  mkpayload "$T/p" 655360
  mkfifo "$T/slow"
  fc_listen L
  bg_start PV "$T/p" "$T/slow" pv -q -L 256k
  run -0 fcx "$T/slow" "$T/c.out" -w 1 127.0.0.1 "$L_PORT"
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$T/p" "$T/L.out"
}

@test "receiver's stdout closes early (| head -c 10): 'write stdout: Broken pipe' exit 7; sender exit 5" {
  mkpayload "$T/p" $((16 * 1048576))
  mkfifo "$T/pipe"
  bg_start HEAD "$T/pipe" "$T/head.out" head -c 10
  fc_listen L --out "$T/pipe"
  run -5 --separate-stderr fcx "$T/p" "$T/c.out" 127.0.0.1 "$L_PORT"
  has_line "^fastcat: (send to|receive from) 127\\.0\\.0\\.1:$L_PORT: (Broken pipe|Connection reset by peer)" "$stderr"
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "receiver exit $rc" "receiver exit 7"
  grep -qx 'fastcat: write stdout: Broken pipe' "$T/L.err" || fail "receiver stderr: $(cat "$T/L.err")"
  assert_equal "$(stat -c %s "$T/head.out")" 10
}

@test "peer gone while stdin still has data: 'send to ...: (N bytes read from stdin not sent)', exit 5" {
  mkfifo "$T/cin"
  # the listener sends nothing and closes at once (--send-only, stdin /dev/null, -q 0)
  fc_listen L --send-only -q 0
  # client stdin: nothing until the listener is gone, then 1 MiB
  bg_start FEED /dev/null "$T/cin" bash -c '
    while kill -0 "$1" 2>/dev/null && [ "$(cut -d" " -f3 /proc/$1/stat 2>/dev/null)" != Z ]; do sleep 0.05; done
    sleep 0.2; head -c 1048576 /dev/zero' _ "$L_PID"
  run -5 --separate-stderr fcx "$T/cin" "$T/c.out" 127.0.0.1 "$L_PORT"
  has_line "^fastcat: send to 127\\.0\\.0\\.1:$L_PORT: (Broken pipe|Connection reset by peer) \\([0-9]+ bytes read from stdin not sent\\)\$" "$stderr"
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 0"
}

@test "receiver killed during a sendfile transfer: the sender counts the file's bytes the peer never got" {
  mkpayload "$T/a.8M" 8388608
  fc_listen L
  bg_start C "$T/a.8M" "$T/c.out" "$FASTCAT" -v --rate-limit 4M 127.0.0.1 "$L_PORT"
  wait_for_size "$T/L.out" 1048576
  kill -KILL "$L_PID"
  local rc left
  wait_exit rc "$C_PID" 10
  assert_equal "sender exit $rc" "sender exit 5"
  # a build without splice has no sendfile either: there the count is read/write's, checked the same
  if ! grep -q 'this build has no splice' "$T/C.err"; then
    grep -q 'stdin -> socket: sendfile' "$T/C.err" || fail "not a sendfile transfer: $(cat "$T/C.err")"
  fi
  left=$(sed -n 's/^fastcat: send to .*: .* (\([0-9]*\) bytes read from stdin not sent)$/\1/p' "$T/C.err")
  [[ -n $left ]] || fail "no count: $(cat "$T/C.err")"
  ((left >= 1048576 && left < 8388608)) || fail "$left bytes not sent: the file's rest is more than 1 MiB"
}

@test "peer resets the connection: 'receive from ...: Connection reset by peer', exit 5" {
  command -v python3 >/dev/null || skip "python3 needed for the RST peer"
  bg_start PY /dev/null "$T/py.port" python3 -c '
import socket, struct, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
c.sendall(b"before reset\n"); time.sleep(0.3)
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
c.close(); time.sleep(5)'
  wait_for_line "$T/py.port" '^[0-9]+$' "$PY_PID"
  local port
  port=$(cat "$T/py.port")
  mkfifo "$T/cin"
  hold_open HOLD "$T/cin" 30
  FC_TIMEOUT=20 run -5 --separate-stderr fcx "$T/cin" "$T/c.out" 127.0.0.1 "$port"
  assert_equal "$stderr" "fastcat: receive from 127.0.0.1:$port: Connection reset by peer"
  assert_equal "$(cat "$T/c.out")" "before reset"
}

@test "port already in use: 'bind 127.0.0.1:PORT: Address already in use', exit 1" {
  fc_listen L
  run -1 --separate-stderr timeout 10 "$FASTCAT" -l 127.0.0.1 "$L_PORT" </dev/null
  assert_equal "$stderr" "fastcat: bind 127.0.0.1:$L_PORT: Address already in use"
  is_alive "$L_PID" || fail "the first listener died"
}

@test "SIGTERM while listening: 'interrupted by SIGTERM', exit 1" {
  fc_listen L
  kill -TERM "$L_PID"
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 1"
  grep -qx 'fastcat: interrupted by SIGTERM' "$T/L.err" || fail "stderr: $(cat "$T/L.err")"
}

@test "SIGINT: 'interrupted by SIGINT', exit 1" {
  run -1 --separate-stderr timeout --preserve-status -s INT 1 "$FASTCAT" -l 127.0.0.1 0 </dev/null
  grep -qx 'fastcat: interrupted by SIGINT' <<<"$stderr" || fail "stderr: $stderr"
}
