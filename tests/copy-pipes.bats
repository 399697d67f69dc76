#!/usr/bin/env bats
# copy-pipes.bats - --copy=auto|rw|splice, byte-exact: zero-copy with splice(2)
# through a private pipe and sendfile(2) from a regular stdin, over tcp and
# unix stream, both ways with stdin and stdout each a regular file or a pipe
# at both ends, the method named per direction in the JSON report ("copy");
# EOF handling through zero-copy (request/reply, half-close, empty input,
# -q 0), a stdin at an offset, and -k sessions without descriptor leaks.
#
# The payloads, pair and the splice probe are in copy.bash.

load helpers
load copy

setup_file() {
  copy_setup_file a.0 a.1048577 "a.$SZ" "a.$BIG" b.0 b.1048577 "b.$SZ"
}

setup() {
  T=$BATS_TEST_TMPDIR
}

# ------------------------------ byte-exact, stdin/stdout files and pipes
#
# Two rows per transport and mode: client stdin/stdout, listener
# stdin/stdout. Row 1: file -> pipe one way, pipe -> file the other; row
# 2 the reverse; so each end sends from a file (sendfile) and from a pipe
# (splice) and receives into a file and into a pipe.

@test "tcp --copy=rw: client on files, listener on pipes: 8 MiB both ways byte-exact, copy rw" { pair tcp rw file file pipe pipe "$SZ" "$SZ"; }
@test "tcp --copy=rw: client on pipes, listener on files: 8 MiB both ways byte-exact, copy rw" { pair tcp rw pipe pipe file file "$SZ" "$SZ"; }

@test "tcp --copy=splice: client on files, listener on pipes: 8 MiB both ways byte-exact, sendfile/splice" { need_splice; pair tcp splice file file pipe pipe "$SZ" "$SZ"; }
@test "tcp --copy=splice: client on pipes, listener on files: 8 MiB both ways byte-exact, splice/sendfile" { need_splice; pair tcp splice pipe pipe file file "$SZ" "$SZ"; }

@test "tcp default (auto): client on files, listener on pipes: 8 MiB both ways byte-exact, zero-copy" { pair tcp auto file file pipe pipe "$SZ" "$SZ"; }
@test "tcp default (auto): client on pipes, listener on files: 8 MiB both ways byte-exact, zero-copy" { pair tcp auto pipe pipe file file "$SZ" "$SZ"; }

@test "unix --copy=rw: client on files, listener on pipes: 8 MiB both ways byte-exact, copy rw" { pair unix rw file file pipe pipe "$SZ" "$SZ"; }
@test "unix --copy=rw: client on pipes, listener on files: 8 MiB both ways byte-exact, copy rw" { pair unix rw pipe pipe file file "$SZ" "$SZ"; }

@test "unix --copy=splice: client on files, listener on pipes: 8 MiB both ways byte-exact, sendfile/splice" { need_splice; pair unix splice file file pipe pipe "$SZ" "$SZ"; }
@test "unix --copy=splice: client on pipes, listener on files: 8 MiB both ways byte-exact, splice/sendfile" { need_splice; pair unix splice pipe pipe file file "$SZ" "$SZ"; }

@test "unix default (auto): client on files, listener on pipes: 8 MiB both ways byte-exact, zero-copy" { pair unix auto file file pipe pipe "$SZ" "$SZ"; }
@test "unix default (auto): client on pipes, listener on files: 8 MiB both ways byte-exact, zero-copy" { pair unix auto pipe pipe file file "$SZ" "$SZ"; }

# 64 MiB one way (the listener sends nothing: an empty file or pipe)
@test "tcp --copy=splice: 64 MiB from a file (sendfile) into a pipe, byte-exact" { need_splice; pair tcp splice file file pipe pipe "$BIG" 0; }
@test "tcp default (auto): 64 MiB from a pipe into a file, byte-exact" { pair tcp auto pipe file file file "$BIG" 0; }
@test "unix --copy=splice: 64 MiB from a pipe into a pipe, byte-exact" { need_splice; pair unix splice pipe file file pipe "$BIG" 0; }

# ------------------------------------------------------------------ EOF

# reqrep TRANSPORT MODE: eof.bats' request/reply through zero-copy pipes:
# the listener's stdout is a pipe into sha256sum, whose output is a pipe
# back into the listener's stdin; the reply can only come after the
# client's EOF (half-close) reached the server program.
reqrep() {
  local tr=$1 mode=$2 rc opts
  opts=(--report=json $(mode_opts "$mode"))
  mkpayload "$T/req" "$SZ"
  mkfifo "$T/to_srv" "$T/from_srv"
  bg_start SRV "$T/to_srv" "$T/from_srv" sha256sum
  listen_on "$tr" L --in "$T/from_srv" --out "$T/to_srv" -- "${opts[@]}"
  FC_TIMEOUT=30 run -0 run_client pipe file "$T/req" "${opts[@]}" "${ADDR[@]}"
  assert_equal "$(cat "$T/c.out")" "$(sha256sum <"$T/req")"
  wait_exit rc "$L_PID" 10
  assert_equal "listener exit $rc" "listener exit 0"
  wait_exit rc "$SRV_PID" 10
  assert_equal "server program exit $rc" "server program exit 0"
  LJSON=$(json_report "$T/L.err")
  jq_is "$LJSON" .received.bytes "$SZ"
  jq_is "$LJSON" .received.copy "$(method "$mode" stdout)"
  jq_is "$LJSON" .sent.copy "$(method "$mode" stdin-pipe)"
}

@test "tcp --copy=rw: request/reply through pipes: reply after the request's EOF, both exit 0" { reqrep tcp rw; }
@test "tcp --copy=splice: request/reply through pipes: reply after the request's EOF, both exit 0" { need_splice; reqrep tcp splice; }
@test "unix --copy=splice: request/reply through pipes: reply after the request's EOF, both exit 0" { need_splice; reqrep unix splice; }

# Half-close with uneven sizes: one side ends long before the other.
@test "tcp --copy=splice: half-close, 1 MiB+1 one way and 8 MiB the other (pipes in, files out)" { need_splice; pair tcp splice pipe file pipe file 1048577 "$SZ"; }
@test "unix --copy=splice: half-close, 8 MiB one way and 1 MiB+1 the other (files in, pipes out)" { need_splice; pair unix splice file pipe file pipe "$SZ" 1048577; }

# Empty input: 0 bytes both ways, from an empty file (sendfile returns 0
# at once) or an empty pipe (splice returns 0).
@test "tcp --copy=rw: 0 bytes both ways (empty file / empty pipe): both exit 0, empty outputs" { pair tcp rw file file pipe pipe 0 0; }
@test "tcp --copy=splice: 0 bytes both ways (empty file / empty pipe): both exit 0, empty outputs" { need_splice; pair tcp splice file file pipe pipe 0 0; }
@test "tcp --copy=splice: 0 bytes both ways (empty pipe / empty file): both exit 0, empty outputs" { need_splice; pair tcp splice pipe pipe file file 0 0; }
@test "unix --copy=splice: 0 bytes both ways (empty file / empty pipe): both exit 0, empty outputs" { need_splice; pair unix splice file pipe pipe file 0 0; }

# -q 0 (eof.bats): exit right after stdin EOF although the peer never
# closes; every byte sent must still arrive.
q0() {
  local mode=$1 cin=$2 opts
  opts=($(mode_opts "$mode"))
  mkfifo "$T/lin"
  hold_open HOLD "$T/lin" 30
  fc_listen L --in "$T/lin" "${opts[@]}"
  FC_TIMEOUT=20 run -0 run_client "$cin" file "$BATS_FILE_TMPDIR/a.1048577" \
    --report=json -q 0 "${opts[@]}" 127.0.0.1 "$L_PORT"
  wait_for_size "$T/L.out" 1048577
  assert_same_bytes "$BATS_FILE_TMPDIR/a.1048577" "$T/L.out"
  is_alive "$L_PID" || fail "peer ended; the test proves nothing"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .sent.bytes 1048577
  jq_is "$CJSON" .sent.copy "$(method "$mode" "stdin-$cin")"
}

@test "--copy=rw -q 0: exits 0 after stdin EOF though the peer never closes; every byte arrives" { q0 rw file; }
@test "--copy=splice -q 0, stdin a file (sendfile): exits 0 after stdin EOF; every byte arrives" { need_splice; q0 splice file; }
@test "--copy=splice -q 0, stdin a pipe (splice): exits 0 after stdin EOF; every byte arrives" { need_splice; q0 splice pipe; }

fd_count() { local f n=0; for f in /proc/"$1"/fd/*; do n=$((n + 1)); done; echo "$n"; }

# wait_fd_count PID N [SECS]: until PID has N open descriptors.
wait_fd_count() {
  local start have
  start=$(now_us)
  until have=$(fd_count "$1"); ((have == $2)); do
    if (($(now_us) - start > ${3:-5} * 1000000)); then
      fail "pid $1 has $have descriptors, expected $2: $(ls -l /proc/"$1"/fd | tr '\n' ' ')"
      return 1
    fi
    sleep 0.05
  done
}

# A regular stdin shared with the shell, already read up to an offset:
# sendfile starts at the file's offset and leaves it at the end (as read).
@test "stdin a regular file at an offset: sendfile sends from there on; the offset ends at EOF" {
  local rc
  fc_listen L
  run -0 bash -c '{ dd bs=1000 count=1 of=/dev/null status=none; timeout 30 "$1" --report=json 127.0.0.1 "$2" 2>"$3"; rc=$?; cat >"$4"; exit $rc; } <"$5"' \
    _ "$FASTCAT" "$L_PORT" "$T/c.err" "$T/rest" "$BATS_FILE_TMPDIR/a.1048577"
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  tail -c +1001 "$BATS_FILE_TMPDIR/a.1048577" >"$T/expected"
  same_bytes "$T/expected" "$T/L.out"
  assert_equal "left for cat: $(stat -c %s "$T/rest")" "left for cat: 0"
  assert_equal "client: $(summary "$(last_json "$T/c.err")")" \
    "client: $(want_summary 1047577 "$(method auto stdin-file)" 0 "$(method auto stdout)")"
}

@test "-k --copy=splice: 4 clients (files and pipes) one after another into one stdout, exact, no descriptor leak" {
  need_splice
  local k in fds  # not i: bats 1.8 `run` overwrites $i
  fc_listen L -k -d --copy=splice --report=json
  fds=$(fd_count "$L_PID")   # idle in accept()
  : >"$T/all"
  for k in 1 2 3 4; do
    head -c $((k * 300001)) "$BATS_FILE_TMPDIR/a.$SZ" >"$T/p$k"
    cat "$T/p$k" >>"$T/all"
    in=file
    ((k % 2)) || in=pipe
    run -0 run_client "$in" file "$T/p$k" --copy=splice 127.0.0.1 "$L_PORT"
    wait_for_count "$T/L.err" '^\{"fastcat":' "$k" "$L_PID"
    # back in accept(): the session's socket and splice pipes are closed
    wait_fd_count "$L_PID" "$fds"
  done
  wait_for_size "$T/L.out" "$(stat -c %s "$T/all")"
  same_bytes "$T/all" "$T/L.out"
  for k in 1 2 3 4; do
    assert_equal "session $k: $(json_report "$T/L.err" "$k" | jq -r '"\(.received.bytes) \(.received.copy)"')" \
      "session $k: $(stat -c %s "$T/p$k") splice"
  done
}
