#!/usr/bin/env bats
# unixfile.bats - the Unix socket file's lifecycle: a listener removes the
# path it created (normal end, error, SIGTERM, SIGINT), replaces a stale
# socket file, refuses a live one (which keeps working), never removes
# something that is not a socket; path length limit (107 bytes); missing
# directory / missing path / refused errors.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
}

# small_xfer PATH LISTENER_PID [fastcat transport options]: send a line to
# the listener at PATH, which must exit 0 and have received it.
small_xfer() {
  local p=$1 pid=$2 rc
  shift 2
  printf 'hello %s\n' "$p" >"$T/msg"
  run -0 fcx "$T/msg" "$T/c.out" "${@:--U}" "$p"
  wait_exit rc "$pid" 20
  assert_equal "listener exit $rc" "listener exit 0"
}

# stale_socket PATH: a socket file nobody listens on (bound by python, which exits).
stale_socket() {
  python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1])' "$1"
  [[ -S $1 ]] || fail "could not create a stale socket at $1"
}

# ------------------------------------------------------------ removal at exit

@test "normal end: the listener's socket file exists while listening and is removed at exit 0" {
  fc_ulisten L -- -U
  [[ -S $L_PATH ]] || fail "$L_PATH is not a socket while listening"
  small_xfer "$L_PATH" "$L_PID"
  assert_equal "$(cat "$T/L.out")" "hello $L_PATH"
  [[ ! -e $L_PATH ]] || fail "$L_PATH still exists after a normal exit"
}

@test "normal end, unix-dgram and seqpacket: socket file removed at exit 0" {
  fc_ulisten D -- -Uu
  [[ -S $D_PATH ]] || fail "$D_PATH is not a socket while listening"
  small_xfer "$D_PATH" "$D_PID" -Uu
  [[ ! -e $D_PATH ]] || fail "$D_PATH (unix-dgram) still exists after exit"
  fc_ulisten Q -- -U --transport unix-seqpacket
  [[ -S $Q_PATH ]] || fail "$Q_PATH is not a socket while listening"
  small_xfer "$Q_PATH" "$Q_PID" -U --transport unix-seqpacket
  [[ ! -e $Q_PATH ]] || fail "$Q_PATH (seqpacket) still exists after exit"
}

@test "SIGTERM while listening: 'interrupted by SIGTERM', exit 1, socket file removed" {
  fc_ulisten L -- -U
  [[ -S $L_PATH ]] || fail "no socket file while listening"
  kill -TERM "$L_PID"
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 1"
  grep -qx 'fastcat: interrupted by SIGTERM' "$T/L.err" || fail "stderr: $(cat "$T/L.err")"
  [[ ! -e $L_PATH ]] || fail "$L_PATH still exists after SIGTERM"
}

@test "SIGTERM during a transfer (unix-dgram listener): exit 1, socket file removed" {
  mkfifo "$T/cin"
  fc_ulisten L -- -Uu
  # the client sends one line, then its stdin stays open
  bg_start FEED /dev/null "$T/cin" bash -c 'echo hi; exec sleep 30'
  bg_start C "$T/cin" "$T/c.out" "$FASTCAT" -Uu "$L_PATH"
  wait_for_size "$T/L.out" 3
  [[ -S $L_PATH ]] || fail "no socket file during the transfer"
  kill -TERM "$L_PID"
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 1"
  [[ ! -e $L_PATH ]] || fail "$L_PATH still exists after SIGTERM"
}

@test "SIGINT while listening: 'interrupted by SIGINT', exit 1, socket file removed" {
  local p=$T/i.sock
  # foreground (a background job of a script would ignore SIGINT)
  run -1 --separate-stderr timeout --preserve-status -s INT 1 "$FASTCAT" -v -lU "$p" </dev/null
  grep -qx "fastcat: listening on $p" <<<"$stderr" || fail "stderr: $stderr"
  grep -qx 'fastcat: interrupted by SIGINT' <<<"$stderr" || fail "stderr: $stderr"
  [[ ! -e $p ]] || fail "$p still exists after SIGINT"
}

@test "error exit (idle -w 1 once connected): exit 4, socket file removed" {
  mkfifo "$T/cin" "$T/lin"
  hold_open HOLD1 "$T/cin" 30
  hold_open HOLD2 "$T/lin" 30
  fc_ulisten L --in "$T/lin" -- -U -w 1
  bg_start C "$T/cin" "$T/c.out" "$FASTCAT" -U "$L_PATH"
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 4"
  grep -qx 'fastcat: idle for 1 s (-w), giving up' "$T/L.err" || fail "stderr: $(cat "$T/L.err")"
  [[ ! -e $L_PATH ]] || fail "$L_PATH still exists after an error exit"
}

# ------------------------------------------------------------ stale / live

@test "stale socket left by a listener killed with SIGKILL is replaced ('removed stale socket' with -v)" {
  fc_ulisten K -- -U
  local p=$K_PATH rc
  kill -KILL "$K_PID"
  wait_exit rc "$K_PID" 10
  [[ -S $p ]] || fail "SIGKILL should leave the socket file behind"
  fc_ulisten L --addr "$p" -- -U
  grep -qx "fastcat: removed stale socket $p" "$T/L.err" || fail "stderr: $(cat "$T/L.err")"
  small_xfer "$p" "$L_PID"
  assert_equal "$(cat "$T/L.out")" "hello $p"
  [[ ! -e $p ]] || fail "$p still exists after the new listener exited"
}

@test "stale socket file created by python (never listened) is replaced, also for unix-dgram" {
  need python3
  local p=$T/py.sock
  stale_socket "$p"
  fc_ulisten L --addr "$p" -- -U
  grep -qx "fastcat: removed stale socket $p" "$T/L.err" || fail "stderr: $(cat "$T/L.err")"
  small_xfer "$p" "$L_PID"
  assert_equal "$(cat "$T/L.out")" "hello $p"
  stale_socket "$p"
  fc_ulisten D --addr "$p" -- -Uu
  small_xfer "$p" "$D_PID" -Uu
  assert_equal "$(cat "$T/D.out")" "hello $p"
  [[ ! -e $p ]] || fail "$p still exists"
}

@test "live socket: 'bind PATH: Address already in use', exit 1; the first listener keeps its file and still works" {
  fc_ulisten L -- -U
  run -1 --separate-stderr timeout 10 "$FASTCAT" -lU "$L_PATH" </dev/null
  assert_equal "$stderr" "fastcat: bind $L_PATH: Address already in use"
  is_alive "$L_PID" || fail "the first listener died"
  [[ -S $L_PATH ]] || fail "the first listener's socket file is gone"
  # a second refused attempt with -v, then a real client reaches the first listener
  run -1 --separate-stderr timeout 10 "$FASTCAT" -v -lU "$L_PATH" </dev/null
  grep -qx "fastcat: bind $L_PATH: Address already in use" <<<"$stderr" || fail "stderr: $stderr"
  ! grep -q 'removed stale socket' <<<"$stderr" || fail "claimed a live socket was stale: $stderr"
  [[ -S $L_PATH ]] || fail "the first listener's socket file is gone"
  small_xfer "$L_PATH" "$L_PID"
  assert_equal "$(cat "$T/L.out")" "hello $L_PATH"
  [[ ! -e $L_PATH ]] || fail "$L_PATH still exists after the first listener exited"
}

@test "live unix-dgram socket: 'Address already in use', exit 1; the first listener still works" {
  fc_ulisten L -- -Uu
  run -1 --separate-stderr timeout 10 "$FASTCAT" -lUu "$L_PATH" </dev/null
  assert_equal "$stderr" "fastcat: bind $L_PATH: Address already in use"
  [[ -S $L_PATH ]] || fail "the first listener's socket file is gone"
  small_xfer "$L_PATH" "$L_PID" -Uu
  assert_equal "$(cat "$T/L.out")" "hello $L_PATH"
}

# ------------------------------------------------------------ not a socket

@test "a regular file at the path is never removed: 'exists and is not a socket', exit 1 (stream and dgram)" {
  local p=$T/file.sock o
  printf 'precious data\n' >"$p"
  for o in -lU -lUu; do
    run -1 --separate-stderr timeout 10 "$FASTCAT" "$o" "$p" </dev/null
    assert_equal "$stderr" "fastcat: $p: exists and is not a socket; not removing it"
    [[ -f $p ]] || fail "$o: $p is gone or no longer a regular file"
    assert_equal "$(cat "$p")" "precious data"
  done
}

@test "a FIFO or a directory at the path is not removed either: exit 1" {
  local f=$T/fifo.sock d=$T/dir.sock
  mkfifo "$f"
  mkdir "$d"
  run -1 --separate-stderr timeout 10 "$FASTCAT" -lU "$f" </dev/null
  assert_equal "$stderr" "fastcat: $f: exists and is not a socket; not removing it"
  [[ -p $f ]] || fail "the FIFO is gone"
  run -1 --separate-stderr timeout 10 "$FASTCAT" -lU "$d" </dev/null
  grep -q "^fastcat: .*$d" <<<"$stderr" || fail "stderr: $stderr"
  [[ -d $d ]] || fail "the directory is gone"
}

# ------------------------------------------------------------ path length

@test "path of 107 bytes: listen, connect and transfer work; socket file removed" {
  local p
  p=$(path_of_len 107 "$T")
  assert_equal "${#p}" 107
  fc_ulisten L --addr "$p" -- -U
  [[ -S $p ]] || fail "no socket at the 107-byte path"
  small_xfer "$p" "$L_PID"
  assert_equal "$(cat "$T/L.out")" "hello $p"
  [[ ! -e $p ]] || fail "the 107-byte path still exists"
}

@test "path of 108 and 109 bytes: 'Unix socket path too long (N bytes, at most 107)', exit 2, listen and connect" {
  local n p o
  for n in 108 109; do
    p=$(path_of_len "$n" "$T")
    assert_equal "${#p}" "$n"
    for o in -lU -U -lUu -Uu; do
      run -2 --separate-stderr timeout 10 "$FASTCAT" "$o" "$p" </dev/null
      assert_equal "$o $n: $stderr" "$o $n: fastcat: $p: Unix socket path too long ($n bytes, at most 107)"
      assert_equal "stdout: '$output'" "stdout: ''"
      [[ ! -e $p ]] || fail "$o created $p"
    done
  done
}

@test "abstract name too long (@ + 108 bytes): too-long error, exit 2" {
  local n
  n=$(head -c 108 /dev/zero | tr '\0' a)
  run -2 --separate-stderr timeout 10 "$FASTCAT" -lU "@$n" </dev/null
  grep -q 'Unix socket path too long' <<<"$stderr" || fail "stderr: $stderr"
}

# ------------------------------------------------------------ errors

@test "listen in a missing directory: 'bind PATH: No such file or directory', exit 1" {
  local p=$T/nodir/x.sock
  run -1 --separate-stderr timeout 10 "$FASTCAT" -lU "$p" </dev/null
  assert_equal "$stderr" "fastcat: bind $p: No such file or directory"
  run -1 --separate-stderr timeout 10 "$FASTCAT" -lUu "$p" </dev/null
  assert_equal "$stderr" "fastcat: bind $p: No such file or directory"
}

@test "connect to a missing path: 'connect PATH: No such file or directory', exit 3 (stream, dgram, seqpacket)" {
  local p=$T/nope.sock
  run -3 --separate-stderr timeout 10 "$FASTCAT" -U "$p" </dev/null
  assert_equal "$stderr" "fastcat: connect $p: No such file or directory"
  run -3 --separate-stderr timeout 10 "$FASTCAT" -Uu "$p" </dev/null
  assert_equal "$stderr" "fastcat: connect $p: No such file or directory"
  run -3 --separate-stderr timeout 10 "$FASTCAT" -U --transport unix-seqpacket "$p" </dev/null
  assert_equal "$stderr" "fastcat: connect $p: No such file or directory"
  [[ ! -e $p ]] || fail "the client created $p"
}

@test "connect to a stale socket file: 'connect PATH: Connection refused', exit 3; file left alone" {
  need python3
  local p=$T/stale.sock
  stale_socket "$p"
  run -3 --separate-stderr timeout 10 "$FASTCAT" -U "$p" </dev/null
  assert_equal "$stderr" "fastcat: connect $p: Connection refused"
  [[ -S $p ]] || fail "a client removed $p"
}

@test "connect to an abstract name nobody holds: exit 3, Connection refused" {
  local n
  n=$(unique_abstract)
  run -3 --separate-stderr timeout 10 "$FASTCAT" -U "@$n" </dev/null
  assert_equal "$stderr" "fastcat: connect @$n: Connection refused"
}
