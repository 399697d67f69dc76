#!/usr/bin/env bats
# The layers of src/ (doc/HACKING.md, "Layers"): a file includes and calls only what its own
# folder or a lower layer holds, feature folders never reach into each other, and no files
# call each other in a circle. tests/layers.py reads it off the code; the first test shows it
# catches each kind of breach on a made-up tree.

load helpers

LAYERS="$BATS_TEST_DIRNAME/layers.py"

# A made-up tree: base/, net/, stripe/ and verify/, each with a header and a .c.
fake_tree() {
  local d=$1
  mkdir -p "$d/base" "$d/net" "$d/stripe" "$d/verify"
  printf 'int base_one(void);\n' >"$d/base/base.h"
  printf '#include "base/base.h"\nint base_one(void)\n{\n\treturn 1;\n}\n' >"$d/base/one.c"
  printf '#include "base/base.h"\nint net_two(void);\n' >"$d/net/net.h"
  printf '#include "net/net.h"\nint net_two(void)\n{\n\treturn base_one() + 1;\n}\n' >"$d/net/two.c"
  printf 'int stripe_three(void);\n' >"$d/stripe/stripe.h"
  printf '#include "net/net.h"\nint stripe_three(void)\n{\n\treturn net_two();\n}\n' >"$d/stripe/three.c"
  printf 'int verify_four(void);\n' >"$d/verify/verify.h"
  printf '#include "net/net.h"\nint verify_four(void)\n{\n\treturn net_two();\n}\n' >"$d/verify/four.c"
}

@test "layers.py: a tree that keeps the rule passes; each kind of breach is named" {
  local T
  T=$(tdir)
  fake_tree "$T/ok"
  run -0 python3 "$LAYERS" "$T/ok"
  assert_output ""

  fake_tree "$T/up"
  printf '#include "net/net.h"\nint base_five(void)\n{\n\treturn net_two();\n}\n' >"$T/up/base/five.c"
  run -1 python3 "$LAYERS" "$T/up"
  assert_line "base/five.c includes net/net.h of net/net.h: upward, from base to net"
  assert_line "base/five.c calls net_two of net/two.c: upward, from base to net"

  fake_tree "$T/side"
  printf '#include "stripe/stripe.h"\nint verify_six(void)\n{\n\treturn stripe_three();\n}\n' >"$T/side/verify/six.c"
  run -1 python3 "$LAYERS" "$T/side"
  assert_line "verify/six.c calls stripe_three of stripe/three.c: sideways, between features verify and stripe"

  fake_tree "$T/circle"
  printf '#include "net/net.h"\nint net_seven(void)\n{\n\treturn net_two();\n}\n' >"$T/circle/net/seven.c"
  printf '#include "net/net.h"\nint net_two(void)\n{\n\treturn net_seven();\n}\n' >"$T/circle/net/two.c"
  run -1 python3 "$LAYERS" "$T/circle"
  assert_line "circle of calls among net/seven.c, net/two.c"

  fake_tree "$T/stray"
  mkdir -p "$T/stray/misc" && printf 'int misc(void);\n' >"$T/stray/misc/misc.h"
  run -1 python3 "$LAYERS" "$T/stray"
  assert_line --partial "misc/misc.h: folder 'misc' is in no layer"
}

@test "src/ keeps the layer rule: no upward or sideways include or call, no circle of calls" {
  run python3 "$LAYERS" "$BATS_TEST_DIRNAME/../src"
  ((status == 0)) || fail "$output"
}
