#!/usr/bin/env bats
# completion.bats - the shell completions of contrib/completion/: the bash one
# driven through bash-completion's _init_completion the way readline calls it,
# checked against the options "fastcat --help-all" lists (so it cannot drift); the
# zsh one parsed by zsh -n and checked against the same list; the values both
# complete, against the lists fastcat's refusals print (all written from
# src/cli/options-table.c); and
# "make install DESTDIR=..." from the build tree installs the program, the man
# page and both completions.

load helpers

COMPL_DIR=$BATS_TEST_DIRNAME/../contrib/completion

# The bash-completion main script, or nothing.
bash_completion_script() {
  local f
  for f in ${BASH_COMPLETION_SCRIPT:-} \
    "$(pkg-config --variable=mainscript bash-completion 2>/dev/null)" \
    /usr/share/bash-completion/bash_completion \
    /usr/local/share/bash-completion/bash_completion \
    /etc/bash_completion; do
    [[ -n $f && -f $f ]] && { printf '%s\n' "$f"; return 0; }
  done
  return 1
}

skip_unless_bash_completion() {
  BC_SCRIPT=$(bash_completion_script) ||
    skip "bash-completion is not installed (e.g. apt-get install bash-completion)"
}

# complete_lines LINE...: for each command line (the cursor at its end) one output
# line, the candidates _fastcat offers, sorted, separated by single spaces
# ("(none)" when it offers nothing).
# Words are split as readline splits them for COMP_WORDS: at blanks, and
# "=" and ":" are words of their own.
complete_lines() {
  local drv=$BATS_TEST_TMPDIR/complete-driver.bash
  cat >"$drv" <<'DRIVER'
source "$1" || exit 90
source "$2" || exit 91
[[ $(complete -p fastcat 2>/dev/null) == *'-F _fastcat'* ]] || exit 92
shift 2
for line in "$@"; do
  COMP_LINE=$line
  COMP_POINT=${#line}
  split=${line//=/ = }
  split=${split//:/ : }
  read -ra COMP_WORDS <<<"$split"
  [[ $line == *[[:blank:]=:] ]] && COMP_WORDS+=('')
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _fastcat fastcat "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  if ((${#COMPREPLY[@]} == 0)); then
    echo '(none)'
  else
    printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort | paste -sd' ' -
  fi
done
DRIVER
  (cd "$BATS_TEST_TMPDIR" && timeout 20 bash --noprofile --norc "$drv" "$BC_SCRIPT" \
    "$COMPL_DIR/fastcat.bash" "$@")
}

# The long options "fastcat --help-all" documents, one a line, without "--"
# (--help is a one-screen summary; --help-all lists them all).
help_long_options() {
  "$FASTCAT" --help-all | grep -oE -- '--[a-z][a-z0-9-]*' | sed 's/^--//' | LC_ALL=C sort -u
}

@test "completion: fastcat --help-all lists long options to check against" {
  run help_long_options
  assert_success
  # not vacuous: the option table has some thirty long options
  ((${#lines[@]} >= 25)) || fail "only ${#lines[@]} long options found in --help-all: $output"
  assert_line transport
  assert_line unix-mode
  assert_line help-all
}

@test "completion(bash): --tr completes to --transport" {
  skip_unless_bash_completion
  run complete_lines 'fastcat --tr' 'fastcat -l --repo'
  assert_success
  assert_equal "${lines[0]}" "--transport"
  assert_equal "${lines[1]}" "--report"
}

@test "completion(bash): --transport u offers udp unix unix-dgram unix-seqpacket" {
  skip_unless_bash_completion
  run complete_lines 'fastcat --transport u' 'fastcat --transport=u' 'fastcat --transport '
  assert_success
  assert_equal "${lines[0]}" "udp unix unix-dgram unix-seqpacket"
  assert_equal "${lines[1]}" "udp unix unix-dgram unix-seqpacket"
  assert_equal "${lines[2]}" "tcp udp unix unix-dgram unix-seqpacket"
}

@test "completion(bash): values of --copy, --report= and --bench-transports" {
  skip_unless_bash_completion
  run complete_lines 'fastcat --copy ' 'fastcat --copy=s' 'fastcat --report=' \
    'fastcat --bench-transports tcp,unix-' 'fastcat --bench-transports p'
  assert_success
  assert_equal "${lines[0]}" "auto rw splice"
  assert_equal "${lines[1]}" "splice"
  assert_equal "${lines[2]}" "human json"
  assert_equal "${lines[3]}" "tcp,unix-dgram tcp,unix-seqpacket"
  assert_equal "${lines[4]}" "pipe"
}

@test "completion(bash): paths after -U, never files for sizes" {
  skip_unless_bash_completion
  touch "$BATS_TEST_TMPDIR/sockfile"
  run complete_lines 'fastcat -U sock' 'fastcat -lU ' 'fastcat --transport unix-dgram so' \
    'fastcat -B ' 'fastcat --chunk-size s' 'fastcat --sndbuf ' 'fastcat -I ' \
    'fastcat --dgram-size=' 'fastcat --bench-sizes ' 'fastcat -w '
  assert_success
  assert_equal "${#lines[@]}" 10
  assert_equal "${lines[0]}" "sockfile"
  [[ " ${lines[1]} " == *" sockfile "* ]] || fail "-lU: no path offered: ${lines[1]}"
  assert_equal "${lines[2]}" "sockfile"
  local i
  for i in 3 4 5 6 7 8 9; do
    assert_equal "${lines[i]}" "(none)"
  done
}

@test "completion(bash): every long option of fastcat --help-all is known" {
  skip_unless_bash_completion
  local -a opts reqs=()
  mapfile -t opts < <(help_long_options)
  ((${#opts[@]} >= 25)) || fail "too few options in --help-all"
  local o
  for o in "${opts[@]}"; do reqs+=("fastcat --$o"); done
  run complete_lines "${reqs[@]}"
  assert_success
  assert_equal "${#lines[@]}" "${#opts[@]}"
  local i missing=
  for i in "${!opts[@]}"; do
    [[ " ${lines[i]} " == *" --${opts[i]} "* ]] || missing+=" --${opts[i]}"
  done
  [[ -z $missing ]] || fail "long options of --help-all the bash completion does not offer:$missing"
}

@test "completion(bash): every short option of fastcat --help-all is offered" {
  skip_unless_bash_completion
  run complete_lines 'fastcat -'
  assert_success
  local o missing=
  for o in $("$FASTCAT" --help-all | grep -oE -- '(^|[ ,])-[a-zA-Z0-9]\b' | tr -d ' ,' | sort -u); do
    [[ " ${lines[0]} " == *" $o "* ]] || missing+=" $o"
  done
  [[ -z $missing ]] || fail "short options of --help-all not offered after '-':$missing"
}

@test "completion(zsh): _fastcat parses and knows every long option of --help-all" {
  local f=$COMPL_DIR/_fastcat o missing=
  [[ -f $f ]] || fail "$f is missing"
  head -n 1 "$f" | grep -qx '#compdef fastcat' || fail "_fastcat does not start with #compdef fastcat"
  for o in $(help_long_options); do
    grep -qE -- "--$o[]=[}+-]" "$f" || missing+=" --$o"
  done
  [[ -z $missing ]] || fail "long options of --help-all _fastcat does not declare:$missing"
  command -v zsh >/dev/null 2>&1 || skip "zsh is not installed (the option check above passed)"
  run zsh -n "$f"
  assert_success
}

# The words a keyword option takes, sorted, on one line, as fastcat's own
# refusal lists them: those lists are written from the keyword tables of
# src/cli/options-table.c, the transport table and the bench link table.
table_values() {
  local msg
  case $1 in
    copy | report) msg=$("$FASTCAT" "--$1=?" 127.0.0.1 1 2>&1) ;;
    transport) msg=$("$FASTCAT" --transport '?' 127.0.0.1 1 2>&1) ;;
    bench-transports) msg=$("$FASTCAT" --bench --bench-transports '?' 2>&1) ;;
  esac
  # "...: must be auto, rw or splice" or "...: unknown transport (tcp, udp, ...)"
  msg=${msg##*must be }
  msg=${msg##*(}
  msg=${msg%)}
  msg=${msg// or /, }
  printf '%s\n' "${msg//, /$'\n'}" | LC_ALL=C sort | paste -sd' ' -
}

@test "completion: fastcat's refusals list the keyword values to check against" {
  run table_values copy
  assert_output "auto rw splice"
  run table_values report
  assert_output "human json"
  run table_values transport
  assert_output --partial "tcp udp unix"
  run table_values bench-transports
  assert_output --partial "memcpy pipe tcp"
}

@test "completion(bash): the values of --copy, --report, --transport, --bench-transports are the table's" {
  skip_unless_bash_completion
  run complete_lines 'fastcat --copy ' 'fastcat --report=' 'fastcat --transport ' \
    'fastcat --bench-transports '
  assert_success
  assert_equal "${lines[0]}" "$(table_values copy)"
  assert_equal "${lines[1]}" "$(table_values report)"
  assert_equal "${lines[2]}" "$(table_values transport)"
  assert_equal "${lines[3]}" "$(table_values bench-transports)"
}

@test "completion(zsh): the values of --copy, --report, --transport, --bench-transports are the table's" {
  local f=$COMPL_DIR/_fastcat
  sorted() { tr ' ' '\n' | sed '/^$/d' | LC_ALL=C sort | paste -sd' ' -; }
  assert_equal "$(grep -- "'--copy=" "$f" | grep -oE '[a-z-]+\\:' | tr -d '\\:' | sorted)" \
    "$(table_values copy)"
  assert_equal "$(grep -- "'--report=" "$f" | sed -n 's/.*:(\([a-z ]*\))'\''.*/\1/p' | sorted)" \
    "$(table_values report)"
  assert_equal "$(sed -n "/^transports=(/,/^)/s/^  '\([a-z-]*\):.*/\1/p" "$f" | sorted)" \
    "$(table_values transport)"
  assert_equal "$(grep -- "'--bench-transports=" "$f" | sed -n 's/.*compadd - \([a-z -]*\)'\''.*/\1/p' | sorted)" \
    "$(table_values bench-transports)"
}

@test "completion(zsh): _fastcat declares every short option of --help-all" {
  local f=$COMPL_DIR/_fastcat o missing=
  for o in $("$FASTCAT" --help-all | grep -oE -- '(^|[ ,])-[a-zA-Z0-9]\b' | tr -d ' ,' | sort -u); do
    grep -qE -- "[{')]$o[[+,]" "$f" || missing+=" $o"
  done
  [[ -z $missing ]] || fail "short options of --help-all _fastcat does not declare:$missing"
}

@test "completion: both completions name no long option that --help-all does not have" {
  local -a opts
  mapfile -t opts < <(help_long_options)
  local f o stale=
  for f in "$COMPL_DIR/fastcat.bash" "$COMPL_DIR/_fastcat"; do
    for o in $(grep -oE -- '--[a-z][a-z0-9-]*' "$f" | sed 's/^--//' | LC_ALL=C sort -u); do
      [[ " ${opts[*]} " == *" $o "* ]] || stale+=" ${f##*/}:--$o"
    done
  done
  [[ -z $stale ]] || fail "options in the completions that fastcat does not have:$stale"
}

@test "completion: make install DESTDIR= installs fastcat, the man page and both completions" {
  local builddir
  builddir=$(cd "$(dirname "$FASTCAT")/.." && pwd)
  [[ -f $builddir/Makefile && -f $builddir/config.status ]] ||
    skip "FASTCAT=$FASTCAT is not in a configured build tree ($builddir has no Makefile)"
  grep -q '^bashcompletiondir' "$builddir/Makefile" ||
    skip "$builddir/Makefile predates the completions (re-run configure / make)"
  command -v make >/dev/null 2>&1 || skip "make is not installed"
  local dest=$BATS_TEST_TMPDIR/dest
  # not the jobserver of a "make check" this may run under
  run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL timeout 25 \
    make -C "$builddir" --no-print-directory install DESTDIR="$dest"
  assert_success
  local prefix
  prefix=$(sed -n 's/^prefix = //p' "$builddir/Makefile")
  [[ -n $prefix ]] || fail "no prefix in $builddir/Makefile"
  local root=$dest$prefix
  [[ -x $root/bin/fastcat ]] || fail "not installed: $root/bin/fastcat
$(cd "$dest" && find . -type f)"
  [[ -f $root/share/man/man1/fastcat.1 ]] || fail "not installed: man1/fastcat.1
$(cd "$dest" && find . -type f)"
  cmp "$COMPL_DIR/fastcat.bash" "$root/share/bash-completion/completions/fastcat" ||
    fail "bash completion not installed as share/bash-completion/completions/fastcat
$(cd "$dest" && find . -type f)"
  cmp "$COMPL_DIR/_fastcat" "$root/share/zsh/site-functions/_fastcat" ||
    fail "zsh completion not installed as share/zsh/site-functions/_fastcat
$(cd "$dest" && find . -type f)"
  run "$root/bin/fastcat" --version
  assert_success
}
