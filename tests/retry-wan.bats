#!/usr/bin/env bats
# retry-wan.bats - --retry through a 3 s blackout in the WAN lab (tests/wanlab.bash): an
# nftables rule drops every packet arriving at either host for 3 s. The sender (-w 1) gives
# the silent connection up and reconnects with its doubling wait until the link is back; the
# receiver (-l -k --resume, no -w) still holds the old, silent connection, and gives way to
# the new one once it has been silent for 1 s. From a file and from a pipe; byte-exact, exit
# 0, at least one retry. The blackout starts once the receiver's file has grown, not at a time.

load helpers
load wanlab

setup() { wanlab_test_setup; }
teardown() { wanlab_test_teardown; }

SIZE=8000000 # 4 s at 2 MB/s
RATE=2M

# blackout on|off: drop (or stop dropping) all input on both hosts.
blackout() {
  local ns
  for ns in "$WL_A" "$WL_B"; do
    if [[ $1 == on ]]; then
      ip netns exec "$ns" nft -f - <<'EOF' || return 1
table inet fcblackout {
  chain input { type filter hook input priority 0; policy drop; }
}
EOF
    else
      ip netns exec "$ns" nft delete table inet fcblackout || return 1
    fi
  done
}

# through_blackout FEED: file or pipe.
through_blackout() {
  local rc
  wanlab_up "$LAB" --rate 100mbit --delay-ms 5
  mkpayload "$T/a" "$SIZE"
  : >"$T/file"
  ip netns exec "$WL_B" "$FASTCAT" -v -l -k --resume "$WL_B_IP" 0 >>"$T/file" 2>"$T/L.err" \
    </dev/null 3>&- &
  L_PID=$!
  fc_track "$L_PID"
  wait_for_line "$T/L.err" 'listening on .*:([0-9]+)$' "$L_PID"
  L_PORT=$(sed -nE 's/.*listening on .*:([0-9]+)$/\1/p' "$T/L.err" | head -n 1)
  (
    rc=0
    if [[ $1 == pipe ]]; then
      cat "$T/a" | ip netns exec "$WL_A" timeout -k 2 60 "$FASTCAT" -v --report=json -w 1 \
        --retry 10 --rate-limit "$RATE" "$WL_B_IP" "$L_PORT" >/dev/null 2>"$T/c.err" || rc=$?
    else
      ip netns exec "$WL_A" timeout -k 2 60 "$FASTCAT" -v --report=json -w 1 --retry 10 \
        --rate-limit "$RATE" "$WL_B_IP" "$L_PORT" <"$T/a" >/dev/null 2>"$T/c.err" || rc=$?
    fi
    echo "$rc" >"$T/c.rc"
  ) 3>&- &
  C_PID=$!
  fc_track "$C_PID"
  wait_for_size "$T/file" 2000000 20
  blackout on
  sleep 3 # the blackout itself: its length is what is tested
  blackout off
  wait_exit rc "$C_PID" 60
  [[ -s $T/c.rc && $(cat "$T/c.rc") == 0 ]] ||
    fail "sender exit $(cat "$T/c.rc" 2>/dev/null): $(cat "$T/c.err")"
  assert_same_bytes "$T/a" "$T/file"
  CJSON=$(json_report "$T/c.err")
  jq_true "$CJSON" '.retries >= 1'
  jq_is "$CJSON" .confirmed "$SIZE"
  grep -q 'resumed session' "$T/L.err" || fail "the receiver resumed nothing: $(cat "$T/L.err")"
}

@test "--retry from a file through a 3 s blackout: byte-exact, exit 0, retried" {
  through_blackout file
}

@test "--retry from a pipe through a 3 s blackout: byte-exact, exit 0, retried" {
  through_blackout pipe
}
