#!/usr/bin/env bats
# docs.bats - README.md and doc/fastcat.1 against the binary:
#   * every example command line that starts a fastcat receiver (-l, -lU,
#     -lk, ...) gets past option parsing and the checks made before listening,
#     run the way a user types it, but on port 0 (an address operand that is
#     not loopback, 0.0.0.0 or ::, becomes 127.0.0.1), on temporary files
#     and sockets (redirections keep their kind: >> stays >>), and with -v;
#   * README's option table names every option of --help-all, and only
#     options --help-all has.

load helpers

README=$BATS_TEST_DIRNAME/../README.md
MANPAGE=$BATS_TEST_DIRNAME/../doc/fastcat.1

# no dump_logs: a failing test's message has each example's stderr
teardown() {
  fc_cleanup
  [[ -z ${SHORT_TMP:-} ]] || rm -rf -- "$SHORT_TMP"
}

# ------------------------------------------------------------ extraction

# readme_commands: the lines of README.md's ```sh blocks, continuation lines
# (ending in \) joined, comments and blank lines dropped.
readme_commands() {
  awk '
    /^```sh[[:space:]]*$/ { inb = 1; next }
    inb && /^```/ { inb = 0; acc = ""; next }
    !inb { next }
    {
      line = acc $0
      if (line ~ /\\$/) { acc = substr(line, 1, length(line) - 1) " "; next }
      acc = ""
      sub(/(^|[[:space:]])#.*$/, "", line)
      sub(/[[:space:]]+$/, "", line)
      if (line ~ /[^[:space:]]/) print line
    }' "$README"
}

# man_commands: the commands of fastcat(1): ".Dl $ cmd" lines and "$ cmd"
# lines of .Bd -literal displays (a line ending in \e or | goes on on the
# next one), with the roff escapes undone.
man_commands() {
  awk '
    /^\.Bd -literal/ { lit = 1; next }
    /^\.Ed/ { lit = 0; acc = ""; next }
    {
      line = $0
      if (acc != "") line = acc line
      else if (line ~ /^\.Dl \$ /) line = substr(line, 7)
      else if (lit && line ~ /^\$ /) line = substr(line, 3)
      else next
      if (line ~ /\\e$/) { acc = substr(line, 1, length(line) - 2) " "; next }
      if (line ~ /\|[[:space:]]*$/) { acc = line " "; next }
      acc = ""
      gsub(/\\e/, "\\", line); gsub(/\\-/, "-", line)
      gsub(/\\\(dq/, "\"", line); gsub(/\\&/, "", line)
      print line
    }' "$MANPAGE"
}

# ------------------------------------------------------------ --help-all

# load_help_all: HELP_ALL, the text of fastcat --help-all, and from its
# option columns ("-w, --timeout SECS", "--allow|--deny CIDR", "--copy=MODE")
# ARGOPT[opt]=1 for each option that takes a value, in the next word or
# (-B1M, --copy=rw) the same one.
declare -gA ARGOPT=()
load_help_all() {
  local line tok opts w
  local -a toks names
  HELP_ALL=$("$FASTCAT" --help-all) || { echo "# fastcat --help-all failed" >&2; return 1; }
  while IFS= read -r line; do
    [[ $line =~ ^[[:space:]]+- ]] || continue
    read -ra toks <<<"${line//,/ }"
    names=()
    for tok in "${toks[@]}"; do
      if [[ $tok =~ ^--?[A-Za-z0-9][A-Za-z0-9-]*(\|--?[A-Za-z0-9][A-Za-z0-9-]*)*$ ]]; then
        IFS='|' read -ra opts <<<"$tok"
        names+=("${opts[@]}")
      elif [[ $tok =~ ^(--[a-z][a-z0-9-]*)=[A-Z]+$ ]]; then
        ARGOPT[${BASH_REMATCH[1]}]=1   # --copy=MODE: required value
        break
      elif [[ $tok =~ ^[A-Z][A-Z0-9]*$ ]]; then
        for w in "${names[@]}"; do ARGOPT[$w]=1; done
        break
      else
        break
      fi
    done
  done <<<"$HELP_ALL"
  # not vacuous: -w, -B, -P and --transport take values
  for w in -w -B -P --transport; do
    [[ -n ${ARGOPT[$w]:-} ]] || { echo "# could not tell from --help-all that $w takes a value" >&2; return 1; }
  done
}

# ------------------------------------------------------------ one example

# is_listen_word WORD: -l, --listen, or a cluster of short flags with l in it
is_listen_word() { [[ $1 == --listen || $1 =~ ^-[A-Za-z0-9]*l[A-Za-z0-9]*$ ]]; }

# receiver_segment CMD: sets SEG, the fastcat part of CMD's pipeline (cmd |
# fastcat -l ..., fastcat -l ... | tar x: the pipes become /dev/null and a
# file); returns 1 if CMD starts no fastcat receiver, 2 if it does but
# cannot be run safely (REASON).
receiver_segment() {
  local cmd=$1 s i n
  local -a segs w
  SEG= REASON=
  [[ $cmd == *fastcat* ]] || return 1
  IFS='|' read -ra segs <<<"$cmd"
  n=${#segs[@]}
  for ((i = 0; i < n; i++)); do
    read -ra w <<<"${segs[i]}"
    [[ ${w[0]:-} == time ]] && w=("${w[@]:1}")
    [[ ${w[0]:-} == fastcat ]] || continue
    for s in "${w[@]:1}"; do
      is_listen_word "$s" || continue
      SEG="${w[*]}"
      if [[ $cmd == *[\;\`\'\"]* || $cmd == *'$('* || $cmd == *'&&'* || $cmd == *'||'* ]]; then
        REASON="quotes, ;, &&, || or \$( in the line: run it by hand"
        return 2
      fi
      return 0
    done
  done
  return 1
}

# build_run N: turn SEG into RUN, a shell command that runs the receiver:
# $FASTCAT -v, the options as written, the port 0 (an address that is not
# loopback: 127.0.0.1), a Unix path or @name made unique in $T, redirections
# of the same kind to files in $T, stderr to $T/exN.err. Returns 2 with
# REASON when SEG cannot be understood.
build_run() {
  local n=$1 i w c rest fd op tgt unix= six= verbose= in= out= err=
  local -a words args=() operands=() redirs=()
  read -ra words <<<"$SEG"
  words=("${words[@]:1}")   # drop "fastcat"
  # options and their values
  for ((i = 0; i < ${#words[@]}; i++)); do
    w=${words[i]}
    if [[ $w =~ ^([0-9]*)(\>\>|\<\>|\>|\<)(.*)$ ]]; then
      fd=${BASH_REMATCH[1]} op=${BASH_REMATCH[2]} tgt=${BASH_REMATCH[3]}
      if [[ -z $tgt ]]; then
        ((i + 1 < ${#words[@]})) || { REASON="redirection '$w' without a file"; return 2; }
        tgt=${words[++i]}
      fi
      [[ -z $fd ]] && { [[ $op == '<' ]] && fd=0 || fd=1; }
      case $fd in
        0) printf 'from an example\n' >"$T/ex$n.in"; tgt=$T/ex$n.in in=1 ;;
        1) tgt=$T/ex$n.out out=1 ;;
        2) tgt=$T/ex$n.err err=1 ;;
        *) REASON="redirection of fd $fd"; return 2 ;;
      esac
      redirs+=("$fd$op$(printf %q "$tgt")")
      continue
    fi
    case $w in
      -v | --verbose) verbose=1 ;;
    esac
    if [[ $w == --transport ]]; then
      [[ ${words[i + 1]:-} == unix* ]] && unix=1
      args+=("$w" "${words[++i]:-}")
      continue
    fi
    if [[ $w == --transport=unix* ]]; then unix=1; fi
    if [[ $w == --* ]]; then
      args+=("$w")
      if [[ $w != *=* && -n ${ARGOPT[$w]:-} ]]; then
        ((i + 1 < ${#words[@]})) || { REASON="$w without its value"; return 2; }
        args+=("${words[++i]}")
      fi
      continue
    fi
    if [[ $w == -?* ]]; then
      args+=("$w")
      rest=${w#-}
      while [[ -n $rest ]]; do
        c=${rest:0:1} rest=${rest:1}
        [[ $c == U ]] && unix=1
        [[ $c == 6 ]] && six=1
        [[ $c == v ]] && verbose=1
        if [[ -n ${ARGOPT[-$c]:-} ]]; then
          if [[ -z $rest ]]; then
            ((i + 1 < ${#words[@]})) || { REASON="-$c without its value"; return 2; }
            args+=("${words[++i]}")
          fi
          break
        fi
      done
      continue
    fi
    operands+=("$w")
  done
  # the operands
  if [[ -n $unix ]]; then
    ((${#operands[@]} == 1)) || { REASON="a Unix listener with ${#operands[@]} operands (${operands[*]})"; return 2; }
    if [[ ${operands[0]} == @* ]]; then
      operands=("@$(unique_abstract)")
    else
      operands=("$T/ex$n.sock")
    fi
  else
    case ${#operands[@]} in
      1) operands=(0) ;;
      2)
        case ${operands[0]} in
          127.0.0.1 | ::1) ;;
          *) [[ -n $six ]] && operands[0]=::1 || operands[0]=127.0.0.1 ;;
        esac
        operands[1]=0
        ;;
      *) REASON="${#operands[@]} operands (${operands[*]}): expected [address] port"; return 2 ;;
    esac
  fi
  [[ -n $verbose ]] || args=(-v "${args[@]}")
  RUN="exec timeout -k 2 30 $(printf %q "$FASTCAT")"
  for w in "${args[@]}" "${operands[@]}"; do RUN+=" $(printf %q "$w")"; done
  # the example's own redirections, of the same kinds; stdin /dev/null,
  # stdout and stderr files where it has none (or a pipe: cmd | fastcat -l,
  # fastcat -l | tar x)
  [[ -n $in ]] || RUN+=" </dev/null"
  [[ -n $out ]] || RUN+=" >$(printf %q "$T/ex$n.out")"
  [[ -n $err ]] || RUN+=" 2>$(printf %q "$T/ex$n.err")"
  for w in "${redirs[@]}"; do RUN+=" $w"; done
  return 0
}

# try_receiver N: run RUN in the background until it prints "listening on"
# (then stop it: ok) or exits (not ok). Sets RESULT.
try_receiver() {
  local n=$1 pid rc start err=$T/ex$n.err
  ( eval "$RUN" ) 3>&- &
  pid=$!
  fc_track "$pid"
  start=$(now_us)
  while :; do
    if grep -q '^fastcat: listening on ' "$err" "$T/ex$n.out" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      wait_exit rc "$pid" 10 || true
      RESULT="ok: $(grep -h '^fastcat: listening on ' "$err" "$T/ex$n.out" 2>/dev/null | head -n 1)"
      return 0
    fi
    if ! is_alive "$pid"; then
      wait_exit rc "$pid" 10 || true
      grep -q '^fastcat: listening on ' "$err" "$T/ex$n.out" 2>/dev/null && continue
      if [[ $rc == 2 ]]; then
        RESULT="USAGE ERROR (exit 2): $(tr '\n' ' ' <"$err")"
      else
        RESULT="exit $rc before listening: $(tr '\n' ' ' <"$err")"
      fi
      return 1
    fi
    if (($(now_us) - start > FC_DEADLINE * 1000000)); then
      RESULT="no 'listening on' line within ${FC_DEADLINE}s: $(tr '\n' ' ' <"$err")"
      return 1
    fi
    sleep 0.05
  done
}

@test "every receiver example of README.md and fastcat(1) starts" {
  local src cmd n=0 bad=0 report= rc
  local -A count=([README.md]=0 [fastcat.1]=0)
  load_help_all
  T=$(tdir)
  if ((${#T} > 80)); then   # room for ".../exNN.sock" within 107 bytes
    SHORT_TMP=$(mktemp -d /tmp/fcdocs.XXXXXX)
    T=$SHORT_TMP
  fi
  while IFS=$'\t' read -r src cmd; do
    rc=0
    receiver_segment "$cmd" || rc=$?
    ((rc == 1)) && continue
    n=$((n + 1))
    count[$src]=$((${count[$src]} + 1))
    if ((rc == 0)); then build_run "$n" || rc=$?; fi
    if ((rc == 2)); then
      bad=$((bad + 1))
      report+="$src: $cmd"$'\n'"    CANNOT RUN: $REASON"$'\n'
      continue
    fi
    if try_receiver "$n"; then
      report+="$src: $cmd"$'\n'"    ran: ${RUN#exec }"$'\n'"    $RESULT"$'\n'
    else
      bad=$((bad + 1))
      report+="$src: $cmd"$'\n'"    ran: ${RUN#exec }"$'\n'"    FAILED: $RESULT"$'\n'
    fi
  done < <(readme_commands | sed 's/^/README.md\t/'; man_commands | sed 's/^/fastcat.1\t/')
  # FC_DOCS_SHOW=1: list every example and its result, also when all pass
  [[ -z ${FC_DOCS_SHOW:-} ]] || sed 's/^/# /' <<<"$report" >&3
  ((bad == 0)) || fail "$bad of $n receiver examples did not reach 'listening on':
$report"
  ((${count[README.md]} >= 5)) ||
    fail "only ${count[README.md]} receiver examples found in README.md's \`\`\`sh blocks (expected 5 or more):
$report"
  ((${count[fastcat.1]} >= 3)) ||
    fail "only ${count[fastcat.1]} receiver examples found in fastcat(1)'s .Dl and .Bd -literal lines (expected 3 or more):
$report"
}

# ------------------------------------------------------------ option table

# readme_table_options: the option spellings of README's option table (the
# first cell of each row starting with "| `-"), one a line: -l, --listen,
# --copy (from --copy=auto\|rw\|splice), --report (from --report[=...]), ...
readme_table_options() {
  local row cell
  while IFS= read -r row; do
    cell=${row#| }
    cell=${cell%% | *}
    grep -oE '`-[^`]*`' <<<"$cell" | tr -d '`' | grep -oE '^--?[A-Za-z0-9][A-Za-z0-9-]*'
  done < <(grep -E '^\| `-' "$README") | LC_ALL=C sort -u
}

@test "README's option table lists every option of --help-all, and names no option fastcat lacks" {
  local -a readme help_long help_short missing=() unknown=()
  local o rows
  load_help_all
  rows=$(grep -cE '^\| `-' "$README") || true
  ((rows >= 30)) || fail "only ${rows:-0} rows starting with '| \`-' in README.md: is the option table still there?"
  mapfile -t readme < <(readme_table_options)
  mapfile -t help_long < <(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$HELP_ALL" | LC_ALL=C sort -u)
  # short options: a dash and one letter or digit standing alone (-l, -4),
  # not a cluster (-lU) or a range (1-64)
  mapfile -t help_short < <(grep -oP -- '(?<![A-Za-z0-9-])-[A-Za-z0-9](?![A-Za-z0-9-])' <<<"$HELP_ALL" |
    LC_ALL=C sort -u)
  ((${#help_long[@]} >= 30)) || fail "only ${#help_long[@]} long options in --help-all"
  ((${#help_short[@]} >= 10)) || fail "only ${#help_short[@]} short options in --help-all: ${help_short[*]}"
  ((${#readme[@]} >= 40)) || fail "only ${#readme[@]} option spellings in README's table: ${readme[*]}"
  for o in "${help_long[@]}" "${help_short[@]}"; do
    printf '%s\n' "${readme[@]}" | grep -Fxq -- "$o" || missing+=("$o")
  done
  for o in "${readme[@]}"; do
    printf '%s\n' "${help_long[@]}" "${help_short[@]}" | grep -Fxq -- "$o" || unknown+=("$o")
  done
  ((${#missing[@]} == 0 && ${#unknown[@]} == 0)) ||
    fail "README.md's option table and fastcat --help-all disagree:
  in --help-all but in no row of README's option table: ${missing[*]:-(none)}
  in README's option table but not in --help-all: ${unknown[*]:-(none)}"
}
