# copy.bash - shared by the tests/copy-*.bats files (load with `load copy`,
# after `load helpers`): the payloads, whether this build has splice, and
# pair, one byte-exact session both ways whose JSON reports must name the
# method ("copy") of each direction.

MIB=1048576
SZ=$((8 * MIB + 12345))   # not a multiple of any chunk or page size
BIG=$((64 * MIB))

# copy_setup_file NAME...: for setup_file. Random payloads
# $BATS_FILE_TMPDIR/NAME, NAME being a.SIZE or b.SIZE (SIZE bytes); and
# FC_NO_SPLICE=1 in a build without splice (configure --disable-splice, not
# Linux), where the tests that need splice skip and the others expect "rw"
# wherever zero-copy would have been used.
copy_setup_file() {
  local f err
  for f in "$@"; do
    mkpayload "$BATS_FILE_TMPDIR/$f" "${f#*.}"
  done
  # --copy=splice is a usage error only in a build without splice; this
  # probe fails on the connect (no such path) in a build that has it.
  err=$(timeout 10 "$FASTCAT" --copy=splice -U /nonexistent/fastcat-probe.sock </dev/null 2>&1 >/dev/null) || true
  if [[ $err == *"this build has no splice"* ]]; then
    export FC_NO_SPLICE=1
  else
    export FC_NO_SPLICE=
  fi
}

need_splice() {
  [[ -z ${FC_NO_SPLICE:-} ]] ||
    skip "this build has no splice (--copy=splice is a usage error): zero-copy paths cannot be tested"
}

# method MODE KIND [TRANSPORT]: the "copy" a flow should report. MODE
# auto|rw|splice, KIND: stdin-file (sendfile), stdin-pipe or stdout
# (splice); auto copies from a pipe into tcp (measured faster there).
method() {
  if [[ $1 == rw || -n ${FC_NO_SPLICE:-} ]]; then
    echo rw
  elif [[ $1 == auto && $2 == stdin-pipe && ${3:-} == tcp ]]; then
    echo rw
  elif [[ $2 == stdin-file ]]; then
    echo sendfile
  else
    echo splice
  fi
}

# mode_opts MODE: the option for MODE; auto is the default, so no option.
mode_opts() {
  case $1 in
    auto) ;;
    *) echo "--copy=$1" ;;
  esac
}

# listen_on TRANSPORT NAME [fc_listen/fc_ulisten arguments]: start a
# listener. Sets ADDR to the client's address arguments.
listen_on() {
  local tr=$1 name=$2 p
  shift 2
  case $tr in
    tcp)
      fc_listen "$name" "$@" || return 1
      p=${name}_PORT
      ADDR=(127.0.0.1 "${!p}")
      ;;
    unix)
      # fc_ulisten wants the transport options after --
      local pre=()
      while (($#)); do
        case $1 in
          --in | --out | --addr) pre+=("$1" "$2"); shift 2 ;;
          --) shift; break ;;
          *) break ;;
        esac
      done
      fc_ulisten "$name" "${pre[@]}" -- -U "$@" || return 1
      p=${name}_PATH
      ADDR=(-U "${!p}")
      ;;
  esac
}

# run_client CIN COUT IN fastcat-args...: the client in the foreground,
# stdin IN as a regular file (CIN=file) or through `cat IN |` (pipe),
# stdout into $T/c.out directly (COUT=file) or through `| cat >` (pipe),
# stderr into $T/c.err. Returns fastcat's exit status.
run_client() {
  local cin=$1 cout=$2 in=$3 cmd
  shift 3
  cmd=(timeout -k 5 "$FC_TIMEOUT" "$FASTCAT" "$@")
  case $cin/$cout in
    file/file) "${cmd[@]}" <"$in" >"$T/c.out" 2>"$T/c.err" ;;
    file/pipe)
      "${cmd[@]}" <"$in" 2>"$T/c.err" | cat >"$T/c.out"
      return "${PIPESTATUS[0]}"
      ;;
    pipe/file)
      cat "$in" | "${cmd[@]}" >"$T/c.out" 2>"$T/c.err"
      return "${PIPESTATUS[1]}"
      ;;
    pipe/pipe)
      cat "$in" | "${cmd[@]}" 2>"$T/c.err" | cat >"$T/c.out"
      return "${PIPESTATUS[1]}"
      ;;
  esac
}

# same_bytes EXPECTED GOT: byte-exact; cmp for speed, and on a mismatch
# assert_same_bytes for its message (sizes and sha256).
same_bytes() {
  cmp -s "$1" "$2" && return 0
  assert_same_bytes "$1" "$2"
  fail "cmp: ${2##*/} differs from ${1##*/}"
}

# last_json FILE: the last JSON report line of FILE (json_report checks it
# with jq; this is the cheap version for tests that run jq on it anyway).
last_json() {
  local line
  line=$(grep '^{"fastcat":' "$1" | tail -n 1)
  [[ -n $line ]] || { echo "# no JSON report line in ${1##*/}" >&2; return 1; }
  printf '%s\n' "$line"
}

# summary JSON: what pair checks in a report, in one jq run. "sendfile
# reads" is the reads count of a sendfile flow (0: sendfile reads and
# writes in one call), "-" for other methods.
summary() {
  jq -r '"exit \(.exit_status); sent \(.sent.bytes) by \(.sent.copy)" +
    " (sendfile reads \(if .sent.copy == "sendfile" then .sent.reads else "-" end));" +
    " received \(.received.bytes) by \(.received.copy)"' <<<"$1" ||
    fail "not a JSON report: $1"
}

# want_summary SENT SENT_METHOD RECEIVED RECEIVED_METHOD: summary's line
# for a report that should say so.
want_summary() {
  local r=-
  [[ $2 == sendfile ]] && r=0
  printf 'exit 0; sent %s by %s (sendfile reads %s); received %s by %s\n' "$1" "$2" "$r" "$3" "$4"
}

# pair TRANSPORT MODE CIN COUT LIN LOUT SIZE_A SIZE_B [fastcat options]:
# one session, both directions at once: the client sends a.SIZE_A, the
# listener b.SIZE_B; each end's stdin is a regular file or a pipe (file /
# pipe) and so is each stdout; both ends get --report=json, the --copy
# option for MODE and the options given. Checks: both exit 0 (each after
# its own stdin EOF and the peer's), both outputs byte-exact, the byte
# counts and the "copy" of each direction in both JSON reports.
# Sets CJSON and LJSON.
pair() {
  local tr=$1 mode=$2 cin=$3 cout=$4 lin=$5 lout=$6 sa=$7 sb=$8 rc a b opts lio=()
  shift 8
  a=$BATS_FILE_TMPDIR/a.$sa
  b=$BATS_FILE_TMPDIR/b.$sb
  opts=(--report=json $(mode_opts "$mode") "$@")
  if [[ $lin == pipe ]]; then
    mkfifo "$T/Lin.fifo"
    bg_start LW /dev/null "$T/Lin.fifo" cat "$b"
    lio+=(--in "$T/Lin.fifo")
  else
    lio+=(--in "$b")
  fi
  if [[ $lout == pipe ]]; then
    mkfifo "$T/Lout.fifo"
    bg_start LR "$T/Lout.fifo" "$T/L.out" cat
    lio+=(--out "$T/Lout.fifo")
  fi
  listen_on "$tr" L "${lio[@]}" -- "${opts[@]}"
  run -0 run_client "$cin" "$cout" "$a" "${opts[@]}" "${ADDR[@]}"
  wait_exit rc "$L_PID" 60
  assert_equal "listener exit $rc" "listener exit 0"
  if [[ $lout == pipe ]]; then
    wait_exit rc "$LR_PID" 30
    assert_equal "listener's stdout reader exit $rc" "listener's stdout reader exit 0"
  fi
  same_bytes "$a" "$T/L.out"   # client -> listener
  same_bytes "$b" "$T/c.out"   # listener -> client
  CJSON=$(last_json "$T/c.err")
  LJSON=$(last_json "$T/L.err")
  assert_equal "client: $(summary "$CJSON")" \
    "client: $(want_summary "$sa" "$(method "$mode" "stdin-$cin" "$tr")" "$sb" "$(method "$mode" stdout)")"
  assert_equal "listener: $(summary "$LJSON")" \
    "listener: $(want_summary "$sb" "$(method "$mode" "stdin-$lin" "$tr")" "$sa" "$(method "$mode" stdout)")"
  rm -f "$T/L.out" "$T/c.out"
}
