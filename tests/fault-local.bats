#!/usr/bin/env bats
# fault-local.bats - issue 5, "nothing lost silently", without a network lab: the
# receiver's output fails (full disk, /dev/full, reader gone, file-size limit),
# a slow reader, 1000 clients of one -k listener, injected EINTR and ENOSPC,
# an idle connection, and a DNS failure. Loopback only, or `unshare -n`.
# Exit statuses of the spec: 0 ok, 3 could not connect, 5 the peer reset or
# closed early, 7 writing stdout failed. When the receiver fails, the sender
# must hear of it too: the receiver's socket closes with unread data, the
# kernel sends a reset, and the sender (waiting for the peer's EOF after its
# own) exits 5, not 0. The failing receivers run with -d: a receiver whose
# stdin is /dev/null sends its EOF at once, and a sender that has handed all
# its data to the kernel then has nothing left to wait for, so whether it
# hears of the failure would be a race; with -d the receiver's EOF (or reset)
# comes only when it is done.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
  MNT=
}

teardown() {
  dump_logs
  fc_cleanup
  if [[ -n $MNT ]] && mountpoint -q "$MNT"; then umount "$MNT" || umount -l "$MNT"; fi
}

# status_is WHO GOT WANT: like assert_equal, but names a death by signal.
status_is() {
  local why=
  [[ $2 =~ ^[0-9]+$ ]] && (($2 > 128)) && why=" (killed by signal $(($2 - 128)): $(kill -l $(($2 - 128)) 2>/dev/null))"
  assert_equal "$1 exit $2$why" "$1 exit $3"
}

# send_to_failing_receiver MSG: send $T/p to listener L (started by the test
# with -d, its stdout fails); the receiver must exit 7 with MSG, the sender 5.
send_to_failing_receiver() {
  local msg=$1 rc
  run --separate-stderr fcx "$T/p" /dev/null 127.0.0.1 "$L_PORT"
  local crc=$status cerr=$stderr
  wait_exit rc "$L_PID" 10
  status_is receiver "$rc" 7
  error_line_in "$T/L.err" "$msg"
  status_is sender "$crc" 5
  # a receiver that had read all that arrived closes with a FIN, and our next
  # segment meets a reset: the kernel reports that one as EPIPE
  one_error_line "$cerr" 'reset|Broken pipe'
}

# vm KEY PID: a /proc/PID/status value in kB (VmRSS, VmHWM), empty once gone.
vm() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$2/status" 2>/dev/null || true; }

# ticks PID: CPU time used so far (utime + stime, clock ticks).
ticks() {
  local s f
  s=$(cat "/proc/$1/stat") || return 1
  read -ra f <<<"${s##*) }"  # fields from the 3rd (state) on: utime is the 14th
  echo $((f[11] + f[12]))
}

# ------------------------------------------------------- stdout failures

@test "receiver's disk fills up (1 MiB tmpfs): receiver exit 7 'No space left on device', sender exit 5" {
  [[ $(id -u) == 0 ]] || skip "mounting a tmpfs needs root"
  MNT=$T/mnt
  mkdir "$MNT"
  mount -t tmpfs -o size=1m fastcat-test "$MNT"
  mkpayload "$T/p" $((4 * 1048576))
  fc_listen L --out "$MNT/out" -d
  send_to_failing_receiver 'No space left on device'
  (($(stat -c %s "$MNT/out") <= 1048576)) || fail "more than the tmpfs holds?"
}

@test "receiver writes to /dev/full: exit 7 'No space left on device', sender exit 5" {
  mkpayload "$T/p" $((4 * 1048576))
  fc_listen L --out /dev/full -d
  send_to_failing_receiver 'write stdout: No space left on device'
}

@test "receiver's stdout closes early (| head -c 10): exit 7 'Broken pipe', sender exit 5" {
  mkpayload "$T/p" $((16 * 1048576))
  mkfifo "$T/pipe"
  bg_start HEAD "$T/pipe" "$T/head.out" head -c 10
  fc_listen L --out "$T/pipe" -d
  send_to_failing_receiver 'write stdout: Broken pipe'
  assert_equal "$(stat -c %s "$T/head.out")" 10
}

@test "file-size limit (ulimit -f 1 MiB, EFBIG): receiver exit 7 'File too large', not killed by SIGXFSZ; sender exit 5" {
  mkpayload "$T/p" $((4 * 1048576))
  local copy
  for copy in auto rw; do  # splice and write(2) hit the limit in different kernel paths
    # bash's ulimit -f counts 1024-byte blocks
    bg_listen L /dev/null "$T/out.$copy" 'listening on .*:([0-9]+)$' \
      bash -c 'ulimit -f 1024 && exec "$@"' _ "$FASTCAT" -v -l -d --copy="$copy" 127.0.0.1 0
    send_to_failing_receiver 'write stdout: File too large'
    assert_equal "$copy: $(stat -c %s "$T/out.$copy")" "$copy: 1048576"
  done
}

# ------------------------------------------------------------ resources

@test "slow reader (receiver behind pv -L 32m, 64 KiB socket buffers): both ends' peak RSS stays small, nothing lost" {
  command -v pv >/dev/null || skip "pv not installed"
  local size=$((64 * 1048576)) base hwm_l=0 hwm_c=0 v rc start ms
  mkpayload "$T/p" "$size"
  mkfifo "$T/rx"
  bg_start PV "$T/rx" "$T/out" pv -q -L 32m
  fc_listen L --out "$T/rx" -I 64k
  base=$(vm VmHWM "$L_PID")  # this build's own size, before any buffer exists
  bg_start C "$T/p" /dev/null "$FASTCAT" -O 64k 127.0.0.1 "$L_PORT"
  # VmHWM only grows: the last reading before each process ends is its peak
  start=$(now_us)
  while is_alive "$C_PID" || is_alive "$L_PID"; do
    v=$(vm VmHWM "$C_PID"); ((${v:-0} > hwm_c)) && hwm_c=$v
    v=$(vm VmHWM "$L_PID"); ((${v:-0} > hwm_l)) && hwm_l=$v
    (($(now_us) - start < 30000000)) || fail "still running after 30 s"
    sleep 0.05
  done
  ms=$(elapsed_ms "$start")
  wait_exit rc "$C_PID" 5
  status_is sender "$rc" 0
  wait_exit rc "$L_PID" 5
  status_is receiver "$rc" 0
  wait_exit rc "$PV_PID" 5
  assert_same_bytes "$T/p" "$T/out"
  # the 64 MiB must have waited in the kernel and in pv, not in fastcat:
  # a few chunk buffers over the idle size, whatever the build (ASan too)
  ((hwm_c - base < 16384)) || fail "sender peak RSS ${hwm_c} kB, idle listener ${base} kB"
  ((hwm_l - base < 16384)) || fail "receiver peak RSS ${hwm_l} kB, idle listener ${base} kB"
  ((hwm_c > 0 && hwm_l > 0)) || fail "no RSS readings"
  # 64 MiB at 32 MiB/s: the reader really was the bottleneck
  ((ms >= 1500)) || fail "done in $ms ms: the reader was not slow"
}

@test "-k listener, 1000 sequential clients: every byte arrives; fd count back to idle, RSS flat between 100 and 1000" {
  command -v python3 >/dev/null || skip "python3 needed for the client loop"
  # ASan keeps freed memory in quarantine (up to 256 MB): RSS would grow with
  # every connection without any leak; LeakSanitizer covers real leaks there
  local fds0 rss100 rss1000
  FC_PREFIX=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0")
  fc_listen L -k
  fds0=$(ls "/proc/$L_PID/fd" | wc -l)
  # each client sends "x", half-closes and reads to the listener's EOF
  cat >"$T/clients.py" <<'EOF'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"x")
    s.shutdown(socket.SHUT_WR)
    while s.recv(4096):
        pass
    s.close()
EOF
  # fds_settle N: all N bytes written out, and the fd count back at idle
  fds_settle() {
    local n=0 fds
    wait_for_size "$T/L.out" "$1" 20 || return 1
    while fds=$(ls "/proc/$L_PID/fd" | wc -l) && ((fds != fds0)); do
      ((n++ < 100)) || { fail "after $1 clients: $fds fds open, $fds0 when idle"; return 1; }
      sleep 0.05
    done
  }
  run -0 timeout 60 python3 "$T/clients.py" "$L_PORT" 100
  fds_settle 100
  rss100=$(vm VmRSS "$L_PID")
  run -0 timeout 120 python3 "$T/clients.py" "$L_PORT" 900
  fds_settle 1000
  rss1000=$(vm VmRSS "$L_PID")
  assert_equal "$(head -c 1000 "$T/L.out" | tr -d x | wc -c) $(stat -c %s "$T/L.out")" "0 1000"
  assert_equal "connections $(grep -c '^fastcat: connection from ' "$T/L.err")" "connections 1000"
  ((rss1000 - rss100 < 512)) || fail "RSS grew from $rss100 kB (100 clients) to $rss1000 kB (1000 clients)"
  is_alive "$L_PID" || fail "the -k listener is gone"
}

@test "idle connection (both stdins open, no data, one side -w 30): both sleep in poll, no CPU used over 1 s" {
  mkfifo "$T/lin" "$T/cin"
  hold_open HOLD1 "$T/lin" 30
  hold_open HOLD2 "$T/cin" 30
  fc_listen L --in "$T/lin"
  # -w 30 arms a poll timeout: it must not turn into a busy loop either
  bg_start C "$T/cin" "$T/c.out" "$FASTCAT" -w 30 127.0.0.1 "$L_PORT"
  wait_for_line "$T/L.err" '^fastcat: connection from ' "$L_PID"
  local pid t0_l t0_c t1_l t1_c st
  # let both settle into their loops (a measurement window, not a readiness wait)
  sleep 0.2
  t0_l=$(ticks "$L_PID") t0_c=$(ticks "$C_PID")
  sleep 1
  t1_l=$(ticks "$L_PID") t1_c=$(ticks "$C_PID")
  for pid in "$L_PID" "$C_PID"; do
    st=$(ps -o stat= -p "$pid")
    [[ $st == S* ]] || fail "pid $pid state '$st', expected S (sleeping)"
  done
  # a busy loop would use ~100 ticks a second; allow one for bookkeeping
  ((t1_l - t0_l <= 1)) || fail "listener used $((t1_l - t0_l)) CPU ticks while idle"
  ((t1_c - t0_c <= 1)) || fail "client used $((t1_c - t0_c)) CPU ticks while idle"
}

# ----------------------------------------------------- syscall injection

@test "EINTR injected into every 3rd read and write, every 2nd poll (strace, both ends, --copy=rw): byte-exact, exit 0" {
  command -v strace >/dev/null || skip "strace not installed"
  command -v pv >/dev/null || skip "pv not installed"
  # reads and writes from the 40th call on (earlier ones belong to the dynamic
  # loader, which would fail); polls are fewer, and the loader makes none
  # shellcheck disable=SC2054 # the commas are strace's
  local rc n inj=(-e trace=read,write,poll,ppoll -e inject=read,write:error=EINTR:when=40+3
    -e inject=poll,ppoll:error=EINTR:when=2+2)
  mkpayload "$T/p" $((8 * 1048576))
  FC_PREFIX=("${STRACE[@]}" -f -qq -o "$T/strace.L" "${inj[@]}")
  fc_listen L --copy=rw -B 16k
  # stdin is a pipe fed slowly, so the sender's reads meet EAGAIN and it polls
  run -0 --separate-stderr timeout 60 bash -c 'pv -q -L 16m "$1" | "${@:2}"' _ "$T/p" \
    "${STRACE[@]}" -f -qq -o "$T/strace.C" "${inj[@]}" "$FASTCAT" --copy=rw -B 16k 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 20
  status_is receiver "$rc" 0
  assert_same_bytes "$T/p" "$T/L.out"
  # the test proves something only if EINTRs reached each kind of call
  local end call
  for end in L C; do
    for call in read:3 write:3 'p?poll:1'; do
      n=$(grep -Ec "^[0-9]+ +${call%:*}\(.*\(INJECTED\)" "$T/strace.$end") || true
      ((n >= ${call#*:})) || fail "$end: only $n EINTRs injected into ${call%:*}: $(grep -c INJECTED "$T/strace.$end") in all"
    done
  done
}

@test "ENOSPC injected into a write to stdout (strace): receiver exit 7 'No space left on device', sender exit 5" {
  command -v strace >/dev/null || skip "strace not installed"
  mkpayload "$T/p" $((4 * 1048576))
  # the 20th write: the -v lines come first, then stdout's chunks
  FC_PREFIX=("${STRACE[@]}" -f -qq -o /dev/null -e trace=write -e inject=write:error=ENOSPC:when=20)
  fc_listen L --copy=rw -d
  send_to_failing_receiver 'write stdout: No space left on device'
  local got
  got=$(stat -c %s "$T/L.out")
  ((got > 0 && got < 4 * 1048576)) || fail "receiver wrote $got bytes: was the ENOSPC a stdout write?"
}

# -------------------------------------------------------------------- DNS

@test "DNS failure under unshare -n (lo up): exit 3 in well under 5 s, one line naming the host" {
  skip_unless_unshare
  # an NSS module or nscd would ask a daemon outside the namespace, which could
  # send the query off the machine: only plain files + DNS here
  local w start ms
  for w in $(sed -n 's/^hosts:[[:space:]]*//p' /etc/nsswitch.conf 2>/dev/null); do
    [[ $w == @(files|dns|myhostname) ]] || skip "nsswitch.conf hosts uses '$w'"
  done
  [[ ! -S /var/run/nscd/socket ]] || skip "nscd is running"
  start=$(now_us)
  # no route out of the namespace: the query cannot leave the machine
  run -3 --separate-stderr timeout 30 unshare -n bash -c 'ip link set lo up && exec "$@"' _ \
    "$FASTCAT" no-such-host.invalid 80 </dev/null
  ms=$(elapsed_ms "$start")
  one_error_line "$stderr" 'no-such-host\.invalid'
  ((ms < 5000)) || fail "took $ms ms"
}
