# helpers.bash - shared by every tests/*.bats file (load with `load helpers`).
#
# Can also be sourced by plain bash (e.g. inside `unshare -n bash -c ...`): the
# bats libraries are only loaded when running under bats.
#
# Conventions
#   * every background process is started through bg_start/bg_listen, which
#     closes fd 3 (bats' output channel) and records the PID in FC_PIDS;
#     fc_cleanup (called from the default teardown) kills exactly those PIDs
#     (and their own children), never anything by name.
#   * no fixed sleeps for readiness: wait_for_line polls every 0.05 s with a
#     deadline; wait_exit polls for a PID to end with a deadline.
#   * files live in $BATS_TEST_TMPDIR (or $BATS_FILE_TMPDIR in setup_file).

if declare -F bats_load_library >/dev/null 2>&1; then
  bats_require_minimum_version 1.5.0
  bats_load_library bats-support
  bats_load_library bats-assert
fi

: "${FASTCAT:?set FASTCAT to the absolute path of the fastcat binary}"

FC_DEADLINE=${FC_DEADLINE:-10}   # seconds to wait for a listener's port line
FC_TIMEOUT=${FC_TIMEOUT:-100}    # seconds a foreground command may run (io/fcx)
FC_PIDS=()

# Directory for this test's files.
tdir() { printf '%s\n' "${BATS_TEST_TMPDIR:-${BATS_FILE_TMPDIR:?}}"; }

# Microseconds since the epoch (EPOCHREALTIME uses the locale's decimal mark).
now_us() { local t=$EPOCHREALTIME; printf '%s\n' "${t//[.,]/}"; }
# Milliseconds elapsed since a now_us value.
elapsed_ms() { echo $(( ($(now_us) - $1) / 1000 )); }

# ---------------------------------------------------------------- processes

fc_track() { FC_PIDS+=("$@"); }

# True while PID exists and is not a zombie.
is_alive() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  [[ ${s%% *} != Z ]]
}

_descendants() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    _descendants "$c"
    echo "$c"
  done
}

# wait_exit VAR PID [SECS]: poll until PID has exited (deadline SECS, default
# 30) and store its exit status in VAR. Returns 1 (test fails) on timeout.
wait_exit() {
  local __var=$1 __pid=$2 __secs=${3:-30} __start __rc=0
  __start=$(now_us)
  while is_alive "$__pid"; do
    if (( $(now_us) - __start > __secs * 1000000 )); then
      echo "# pid $__pid ($(tr '\0' ' ' <"/proc/$__pid/cmdline" 2>/dev/null)) still running after ${__secs}s" >&2
      printf -v "$__var" '%s' timeout
      return 1
    fi
    sleep 0.05
  done
  wait "$__pid" 2>/dev/null || __rc=$?
  printf -v "$__var" '%s' "$__rc"
}

# _term_wait PID...: SIGTERM, wait up to 3 s, then SIGKILL what is left.
_term_wait() {
  local pid start
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  start=$(now_us)
  for pid in "$@"; do
    while is_alive "$pid" && (( $(now_us) - start < 3000000 )); do sleep 0.05; done
  done
  kill -KILL "$@" 2>/dev/null || true
}

# Kill every PID this test started and reap them. Their children go first
# (e.g. fastcat under strace or script(1)), so the parents can exit on their own.
fc_cleanup() {
  local pid kids=() tops=()
  for pid in "${FC_PIDS[@]}"; do
    is_alive "$pid" || continue
    kids+=($(_descendants "$pid"))
    tops+=("$pid")
  done
  _term_wait "${kids[@]}"
  _term_wait "${tops[@]}"
  for pid in "${FC_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  FC_PIDS=()
}

# Show the stderr files of background processes when a test failed.
dump_logs() {
  local f d
  d=$(tdir)
  [[ -z ${BATS_TEST_COMPLETED:-} ]] || return 0
  for f in "$d"/*.err; do
    [[ -s $f ]] || continue
    echo "# --- ${f##*/} (last 20 lines):"
    tail -n 20 "$f" | sed 's/^/#   /'
  done >&2
}

# Default teardown; a .bats file may define its own that calls these.
teardown() { dump_logs; fc_cleanup; }

# bg_start NAME IN OUT cmd...: run cmd in the background with stdin IN,
# stdout OUT, stderr $(tdir)/NAME.err, fd 3 closed. Stdin is opened first
# (matters for FIFOs). Sets NAME_PID.
bg_start() {
  local name=$1 in=$2 out=$3 err
  shift 3
  err=$(tdir)/$name.err
  : >"$err" # now, not in the child: a wait that runs first must not read a reused NAME's old lines
  "$@" <"$in" >"$out" 2>"$err" 3>&- &
  fc_track "$!"
  printf -v "${name}_PID" '%s' "$!"
}

# wait_for_line FILE ERE [PID] [SECS]: poll FILE until a line matches ERE.
# Fails early if PID exits first, or at the deadline.
wait_for_line() {
  local file=$1 re=$2 pid=${3:-} secs=${4:-$FC_DEADLINE} start
  start=$(now_us)
  until grep -Eq -- "$re" "$file" 2>/dev/null; do
    if [[ -n $pid ]] && ! is_alive "$pid"; then
      grep -Eq -- "$re" "$file" 2>/dev/null && return 0
      { echo "# pid $pid exited before printing /$re/ in ${file##*/}:"; sed 's/^/#   /' "$file"; } >&2
      return 1
    fi
    if (( $(now_us) - start > secs * 1000000 )); then
      { echo "# timeout (${secs}s) waiting for /$re/ in ${file##*/}:"; sed 's/^/#   /' "$file"; } >&2
      return 1
    fi
    sleep 0.05
  done
}

# wait_for_count FILE ERE N [PID] [SECS]: until at least N lines match.
wait_for_count() {
  local file=$1 re=$2 n=$3 pid=${4:-} secs=${5:-$FC_DEADLINE} start c
  start=$(now_us)
  while :; do
    c=$(grep -Ec -- "$re" "$file" 2>/dev/null) || true
    (( ${c:-0} >= n )) && return 0
    if [[ -n $pid ]] && ! is_alive "$pid"; then
      c=$(grep -Ec -- "$re" "$file" 2>/dev/null) || true
      (( ${c:-0} >= n )) && return 0
      echo "# pid $pid exited with ${c:-0}/$n lines /$re/ in ${file##*/}" >&2
      return 1
    fi
    if (( $(now_us) - start > secs * 1000000 )); then
      echo "# timeout (${secs}s): ${c:-0}/$n lines /$re/ in ${file##*/}" >&2
      return 1
    fi
    sleep 0.05
  done
}

# wait_for_size FILE BYTES [SECS]: until FILE holds at least BYTES bytes.
wait_for_size() {
  local file=$1 want=$2 secs=${3:-$FC_DEADLINE} start have
  start=$(now_us)
  while :; do
    have=$(stat -c %s "$file" 2>/dev/null) || have=0
    (( have >= want )) && return 0
    if (( $(now_us) - start > secs * 1000000 )); then
      echo "# timeout (${secs}s): ${file##*/} has $have of $want bytes" >&2
      return 1
    fi
    sleep 0.05
  done
}

# bg_listen NAME IN OUT ERE cmd...: start a listener whose stderr prints its
# port; ERE's first group is the port. Sets NAME_PID and NAME_PORT.
# The listener opens stdout before stdin (so FIFO pairs cannot deadlock).
bg_listen() {
  local name=$1 in=$2 out=$3 re=$4 err pid port
  shift 4
  err=$(tdir)/$name.err
  # emptied here, before the fork: the child's own 2> may run after the
  # wait below has read a reused NAME's old port line (rcvlowat.bats has L twice)
  : >"$err"
  # _open (from _listen_args, else truncate): how stdout opens OUT
  case ${_open:-} in
    append) "$@" >>"$out" 2>"$err" <"$in" 3>&- & ;;
    rw) "$@" 1<>"$out" 2>"$err" <"$in" 3>&- & ;;
    *) "$@" >"$out" 2>"$err" <"$in" 3>&- & ;;
  esac
  pid=$!
  fc_track "$pid"
  printf -v "${name}_PID" '%s' "$pid"
  wait_for_line "$err" "$re" "$pid" || return 1
  port=$(sed -nE "s/.*$re/\\1/p" "$err" | head -n 1)
  if ! [[ $port =~ ^[0-9]+$ ]] || (( port < 1 || port > 65535 )); then
    echo "# $name: could not read a port from ${err##*/}: '$port'" >&2
    return 1
  fi
  printf -v "${name}_PORT" '%s' "$port"
}

# parses --in/--out/--addr into _in/_out/_addr, --append (>> OUT) or --rw (1<> OUT) into
# _open, the rest into _rest
_listen_args() {
  _in=/dev/null _out=$(tdir)/$1.out _addr=127.0.0.1 _open=
  shift
  while (($#)); do
    case $1 in
      --in) _in=$2; shift 2 ;;
      --out) _out=$2; shift 2 ;;
      --append) _open=append; shift ;;
      --rw) _open=rw; shift ;;
      --addr) _addr=$2; shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  _rest=("$@")
}

# fc_listen NAME [--in F] [--out F] [--addr A] [--] [fastcat options...]
# Runs: ${FC_PREFIX[@]} $FASTCAT -v -l OPTIONS ADDR 0 (ADDR '' = none).
# Defaults: stdin /dev/null, stdout $(tdir)/NAME.out, addr 127.0.0.1.
fc_listen() {
  local name=$1 _in _out _addr _rest a=() _open
  _listen_args "$@"
  [[ -n $_addr ]] && a=("$_addr")
  bg_listen "$name" "$_in" "$_out" 'listening on .*:([0-9]+)$' \
    "${FC_PREFIX[@]}" "$FASTCAT" -v -l "${_rest[@]}" "${a[@]}" 0
}

# nc_listen NAME [--in F] [--out F] [--addr A] [--] [nc options...]
# nc.openbsd -l -v prints "Listening on localhost 36507" on stderr.
nc_listen() {
  local name=$1 _in _out _addr _rest _open
  _listen_args "$@"
  bg_listen "$name" "$_in" "$_out" '^Listening on .* ([0-9]+)$' \
    nc.openbsd -l -v "${_rest[@]}" "$_addr" 0
}

# socat_listen NAME [--in F] [--out F] [--] socat arguments (with a
# TCP-LISTEN:0,... address). socat -d -d prints
# "... N listening on AF=2 127.0.0.1:60337".
socat_listen() {
  local name=$1 _in _out _addr _rest _open
  _listen_args "$@"
  bg_listen "$name" "$_in" "$_out" 'listening on AF=[0-9]+ .*:([0-9]+)$' \
    socat -d -d "${_rest[@]}"
}

# io IN OUT cmd...: foreground command with stdin/stdout redirected and a
# timeout (exit 124 on timeout). Use as: run -0 io in out cmd...
io() {
  local in=$1 out=$2
  shift 2
  timeout -k 5 "$FC_TIMEOUT" "$@" <"$in" >"$out"
}
# fcx IN OUT fastcat-args...: fastcat in the foreground (see io).
fcx() { local in=$1 out=$2; shift 2; io "$in" "$out" "$FASTCAT" "$@"; }

# closed_port [ADDR]: sets CLOSED_PORT to a port that had a fastcat listener
# a moment ago (now killed), so connecting to it is refused.
closed_port() {
  local rc
  fc_listen CLOSED --addr "${1:-127.0.0.1}" || return 1
  kill -KILL "$CLOSED_PID"
  wait_exit rc "$CLOSED_PID" 10
  CLOSED_PORT=$CLOSED_PORT
}

# Hold the write end of a FIFO open (so its reader never sees EOF) until
# NAME is killed: hold_open NAME FIFO [SECS].
hold_open() { bg_start "$1" /dev/null "$2" sleep "${3:-60}"; }

# ------------------------------------------------------------------ payloads

# mkpayload FILE BYTES: random bytes.
mkpayload() { head -c "$2" /dev/urandom >"$1"; }

sha_of() { local h; h=$(sha256sum <"$1") && printf '%s\n' "${h%% *}"; }

# assert_same_bytes EXPECTED GOT: byte-exact (sha256 and size).
assert_same_bytes() {
  local exp=$1 got=$2 he hg se sg
  [[ -f $got ]] || { fail "output file $got does not exist"; return 1; }
  he=$(sha_of "$exp"); hg=$(sha_of "$got")
  se=$(stat -c %s "$exp"); sg=$(stat -c %s "$got")
  if [[ $he != "$hg" || $se != "$sg" ]]; then
    fail "payload mismatch: expected ${exp##*/} ($se B, sha256 ${he:0:16}...), got ${got##*/} ($sg B, sha256 ${hg:0:16}...)"
    return 1
  fi
}

# xxh64_of FILE: `xxhsum -H64` of FILE (16 hex digits, big-endian like
# fastcat's), or nothing if xxhsum is missing or prints another format.
xxh64_of() {
  local h
  command -v xxhsum >/dev/null || return 0
  h=$(xxhsum -H64 <"$1" 2>/dev/null) || h=$(xxhsum -H1 <"$1" 2>/dev/null) || return 0
  h=${h%% *}
  [[ $h =~ ^[0-9a-f]{16}$ ]] && printf '%s\n' "$h"
  return 0
}

# check_both PEER_PID PEER_OUT FASTCAT_OUT: after a session of fastcat with
# another program (payload $A from fastcat, $B from the peer), the peer exits
# 0 and both directions are byte-exact.
check_both() {
  local rc
  wait_exit rc "$1" 30
  assert_equal "peer exit $rc" "peer exit 0"
  assert_same_bytes "$A" "$2"   # fastcat -> peer
  assert_same_bytes "$B" "$3"   # peer -> fastcat
}

# ------------------------------------------------------------------ reports

# listener_ok SECS: the listener L (fc_listen L, fc_ulisten L) exits 0
# within SECS.
listener_ok() {
  local rc
  wait_exit rc "$L_PID" "$1"
  assert_equal "listener exit $rc" "listener exit 0"
}

# both_reports: CJSON and LJSON, the JSON reports of the client ($T/c.err)
# and of the listener L ($T/L.err).
both_reports() { CJSON=$(json_report "$T/c.err") && LJSON=$(json_report "$T/L.err"); }

# json_report FILE [N]: the Nth (default: last) line of FILE that starts
# with {"fastcat":, checked to be one JSON object.
json_report() {
  local file=$1 n=${2:-} line
  if [[ -n $n ]]; then
    line=$(grep '^{"fastcat":' "$file" | sed -n "${n}p")
  else
    line=$(grep '^{"fastcat":' "$file" | tail -n 1)
  fi
  [[ -n $line ]] || { echo "# no JSON report line in ${file##*/}" >&2; return 1; }
  jq -e 'type == "object"' >/dev/null <<<"$line" || { echo "# not a JSON object: $line" >&2; return 1; }
  printf '%s\n' "$line"
}

# jq_is JSON FILTER EXPECTED: assert jq -r FILTER on JSON prints EXPECTED.
jq_is() {
  local got
  got=$(jq -r "$2" <<<"$1") || { fail "jq '$2' failed on: $1"; return 1; }
  [[ $got == "$3" ]] || { fail "jq '$2': expected '$3', got '$got' in: $1"; return 1; }
}

# jq_true JSON FILTER: assert the jq boolean FILTER is true.
jq_true() {
  jq -e "$2" >/dev/null <<<"$1" || { fail "not true: jq '$2' on: $1"; return 1; }
}

# ---------------------------------------------------- usage and error lines

# usage_run fastcat-args...: fastcat (stdin /dev/null) exits 2 (usage)
# within 10 s and prints nothing on stdout; its stderr is in $stderr and
# ${stderr_lines[@]}.
usage_run() {
  run -2 --separate-stderr timeout 10 "$FASTCAT" "$@" </dev/null
  assert_equal "stdout: '$output'" "stdout: ''"
}

# usage_one_line fastcat-args...: usage_run, and exactly one stderr line.
usage_one_line() {
  usage_run "$@"
  assert_equal "stderr lines: ${#stderr_lines[@]}: $stderr" "stderr lines: 1: $stderr"
}

# usage_err EXPECTED_LINE fastcat-args...: usage_run, and one of the stderr
# lines is EXPECTED_LINE.
usage_err() {
  local exp=$1
  shift
  usage_run "$@"
  grep -Fxq -- "$exp" <<<"$stderr" || fail "args [$*]: expected stderr line: $exp
got: $stderr"
}

# usage_prefix PREFIX fastcat-args...: usage_run, and one of the stderr
# lines starts with PREFIX.
usage_prefix() {
  local exp=$1 l
  shift
  usage_run "$@"
  for l in "${stderr_lines[@]}"; do [[ $l == "$exp"* ]] && return 0; done
  fail "args [$*]: expected a stderr line starting with: $exp
got: $stderr"
}

# striped_retry_once CONFIRMED 'I of N': a -P --retry sender's $CJSON and -v lines in $T/c.err
# say one retry after its connection I of N (an ERE, e.g. '[1-4] of 4') was lost, and the
# receiver confirmed CONFIRMED bytes; the receiver's $T/L.err, that it resumed the session.
striped_retry_once() {
  jq_is "$CJSON" .retries 1
  jq_is "$CJSON" .confirmed "$1"
  grep -Eq "^fastcat: connection lost after .* \\(-P: connection $2: .*\\); retry 1/3 in 0\\.5 s\$" "$T/c.err" ||
    fail "no 'connection lost' line: $(cat "$T/c.err")"
  grep -q -- '--retry: resumed session' "$T/L.err" || fail "the receiver did not resume: $(cat "$T/L.err")"
}

# usage_exact EXPECTED_LINE fastcat-args...: usage_one_line, and that line,
# all of stderr, is EXPECTED_LINE.
usage_exact() {
  local exp=$1
  shift
  usage_one_line "$@"
  assert_equal "${stderr_lines[0]}" "$exp"
  assert_equal "$stderr" "$exp"
}

# one_error_line TEXT ERE: TEXT (a stderr without -v) is exactly one line,
# "fastcat: ...", matching ERE.
one_error_line() {
  local n
  n=$(grep -c '' <<<"$1")
  [[ -n $1 && $n == 1 ]] || fail "expected one line on stderr, got $n:
$1"
  [[ $1 == "fastcat: "* ]] || fail "not a 'fastcat: ' message: $1"
  grep -Eq -- "$2" <<<"$1" || fail "'$1' does not match /$2/"
}

# error_line_in FILE ERE: a -v stderr FILE has exactly one error line, "fastcat: "
# followed by text matching ERE.
error_line_in() {
  local n
  n=$(grep -Ec -- "^fastcat: .*($2)" "$1")
  [[ $n == 1 ]] || fail "expected one error line /$2/ in ${1##*/}, got $n:
$(cat "$1")"
}

# ------------------------------------------------------------------ strace

# strace as a command prefix. LeakSanitizer cannot run under ptrace, so leak
# checks are off for traced runs (no effect on builds without sanitizers).
STRACE=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace)

# check_strace_sizes PREFIX MAX_READ MAX_WRITE: PREFIX.* are strace -ff -s 0
# outputs of one fastcat run (trace=read,write,recvfrom,sendto,connect,
# accept,accept4,close). On the data fds (0, 1 and the connected socket, from
# its connect/accept to its close) no read may ask for or get more than
# MAX_READ bytes and no write more than MAX_WRITE. Prints per-kind maxima;
# fails if any of the four data paths saw no traffic.
check_strace_sizes() {
  local f
  for f in "$1".*; do cat "$f"; echo "--- end of $f"; done | perl -e '
    my ($lr, $lw) = @ARGV; my (%sock, %max, %cnt); my ($bad, $socks) = (0, 0);
    while (<STDIN>) {
      if (/^--- end of /) { %sock = (); next }   # fds are per process
      s/^\d+\s+//;
      if (/^connect\((\d+),/ || /^accept4?\(.*=\s+(\d+)\s*$/) { $sock{$1} = 1; $socks++; next }
      if (/^close\((\d+)\)/) { delete $sock{$1}; next }
      next unless /^(read|write|recvfrom|sendto)\((\d+), ""(?:\.\.\.)?, (\d+)\b.*=\s+(-?\d+)/;
      my ($sc, $fd, $n, $ret) = ($1, $2, $3, $4);
      my $k = $fd == 0 ? "stdin" : $fd == 1 ? "stdout" : $sock{$fd} ? "sock" : next;
      my $d = $sc =~ /^(read|recvfrom)$/ ? "read" : "write";
      my $lim = $d eq "read" ? $lr : $lw;
      if ($n > $lim || $ret > $lim) { print "TOO BIG (limit $lim): $_"; $bad++; }
      $cnt{"$d $k"}++;
      $max{"$d $k"} = $ret if $ret > ($max{"$d $k"} // -1);
    }
    print "no connect/accept line in the trace\n" unless $socks;
    for my $k ("read stdin", "write sock", "read sock", "write stdout") {
      printf "%s: %d calls, max %d\n", $k, $cnt{$k} // 0, $max{$k} // -1;
      $bad++ unless ($max{$k} // 0) > 0;
    }
    exit($bad || !$socks ? 1 : 0);' "$2" "$3"
}

# --------------------------------------------------------------- environment

# need CMD: skip the test unless CMD is installed.
need() { command -v "$1" >/dev/null || skip "$1 not installed"; }

ipv6_ok() {
  grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6 2>/dev/null
}
skip_unless_ipv6() { ipv6_ok || skip "::1 is not configured on this machine"; }

unshare_ok() { unshare -n true 2>/dev/null; }
skip_unless_unshare() { unshare_ok || skip "unshare -n does not work here (needs root / user namespaces)"; }

# ------------------------------------------------------- unix / datagram

# unique_abstract: a Linux abstract socket name (without the leading @)
# that no other test or run uses.
unique_abstract() {
  printf 'fc-%s-%s-%s%s\n' "$$" "${BATS_TEST_NUMBER:-0}" "$RANDOM" "$RANDOM"
}

# abstract_bound NAME: some socket is bound to the abstract name @NAME.
abstract_bound() { grep -q -- " @$1\$" /proc/net/unix 2>/dev/null; }

# wait_for_socket PATH [PID] [SECS]: poll until PATH is a socket file (or,
# for @NAME, until /proc/net/unix lists the abstract name). For listeners
# that print nothing useful (nc.openbsd -lU, socat UNIX-LISTEN/RECV).
wait_for_socket() {
  local p=$1 pid=${2:-} secs=${3:-$FC_DEADLINE} start
  start=$(now_us)
  while :; do
    if [[ $p == @* ]]; then abstract_bound "${p#@}" && return 0
    else [[ -S $p ]] && return 0
    fi
    if [[ -n $pid ]] && ! is_alive "$pid"; then
      echo "# pid $pid exited before creating socket $p" >&2
      return 1
    fi
    if (( $(now_us) - start > secs * 1000000 )); then
      echo "# timeout (${secs}s) waiting for socket $p" >&2
      return 1
    fi
    sleep 0.05
  done
}

# fc_ulisten NAME [--in F] [--out F] [--addr PATH|@NAME] [--] [fastcat options...]
# Unix-socket listener: ${FC_PREFIX[@]} $FASTCAT -v -l OPTIONS PATH, where
# OPTIONS choose the transport (-U, -Uu, -U --transport unix-seqpacket, ...).
# Default PATH: $(tdir)/NAME.sock. Waits for "fastcat: listening on PATH"
# (the exact path). Sets NAME_PID and NAME_PATH.
fc_ulisten() {
  local name=$1 _in _out _addr _rest err pid got _open
  _listen_args "$@"
  [[ $_addr == 127.0.0.1 ]] && _addr=$(tdir)/$name.sock
  err=$(tdir)/$name.err
  : >"$err" # before the fork, as in bg_listen
  "${FC_PREFIX[@]}" "$FASTCAT" -v -l "${_rest[@]}" "$_addr" >"$_out" 2>"$err" <"$_in" 3>&- &
  pid=$!
  fc_track "$pid"
  printf -v "${name}_PID" '%s' "$pid"
  printf -v "${name}_PATH" '%s' "$_addr"
  wait_for_line "$err" '^fastcat: listening on ' "$pid" || return 1
  got=$(sed -n 's/^fastcat: listening on //p' "$err" | head -n 1)
  if [[ $got != "$_addr" ]]; then
    echo "# $name: listening line names '$got', expected '$_addr'" >&2
    return 1
  fi
}

# path_of_len N DIR: a path inside DIR that is exactly N bytes long
# (DIR/xxx...x). Fails if DIR is too long for that.
path_of_len() {
  local n=$1 dir=$2 pad
  pad=$(( n - ${#dir} - 1 ))
  (( pad >= 1 )) || { echo "# $dir is too long for a $n-byte path" >&2; return 1; }
  printf '%s/%s\n' "$dir" "$(head -c "$pad" /dev/zero | tr '\0' x)"
}

# feed_fifo NAME FIFO PAYLOAD WATCH BYTES [after]: background writer (NAME)
# into FIFO: writes PAYLOAD, then holds FIFO open until the file WATCH has
# BYTES bytes (at most 30 s), so the reader's stdin ends only then. With
# "after": waits for WATCH first, then writes PAYLOAD and closes. For peers
# (nc.openbsd) that stop receiving once their own stdin ends or once their
# peer half-closes.
feed_fifo() {
  local name=$1 fifo=$2 payload=$3 watch=$4 bytes=$5 when=${6:-before}
  bg_start "$name" /dev/null "$fifo" bash -c '
    waitfor() {
      local i=0
      while [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -lt "$2" ] && [ $i -lt 600 ]; do
        sleep 0.05; i=$((i + 1))
      done
    }
    if [ "$5" = after ]; then waitfor "$2" "$3"; cat "$1"
    else cat "$1"; waitfor "$2" "$3"; fi' _ "$payload" "$watch" "$bytes" "$when"
}

# ------------------------------------------------------------ capabilities

# has_net_admin: this shell has CAP_NET_ADMIN in its effective set (root, usually).
has_net_admin() {
  local e
  e=$(awk '/^CapEff:/ { print $2 }' /proc/self/status 2>/dev/null)
  [[ -n $e ]] && (( (0x$e >> 12) & 1 ))
}

# no_admin_prefix: NOADMIN, a command prefix that runs a program without
# CAP_NET_ADMIN (dropped from the bounding set, so exec cannot gain it back),
# for the paths a process without it takes (-O/-I capped by the sysctls).
# Empty when we lack it already; skips the test without setpriv.
no_admin_prefix() {
  NOADMIN=()
  has_net_admin || return 0
  command -v setpriv >/dev/null || skip "setpriv not installed (to drop CAP_NET_ADMIN)"
  NOADMIN=(setpriv --inh-caps=-net_admin --bounding-set=-net_admin)
}
