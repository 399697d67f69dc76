# resume.bash - what resume.bats and parallel-resume.bats share: a source and the
# part of it the receiver already has.

SIZE=6000000 # the source: not a multiple of the chunk or of the 1 MiB window
PART=2500000 # what the receiver has of it
CHUNK=98304  # the default chunk (CHUNK_DEFAULT)

# resume_setup: $A, the source of SIZE bytes, and $T/file, its first PART bytes.
resume_setup() {
  T=$BATS_TEST_TMPDIR
  A=$T/source
  mkpayload "$A" "$SIZE"
  head -c "$PART" "$A" >"$T/file"
}

# not_a_prefix SHA: after both ends refused a file that is not a prefix (exit 6),
# $T/file is still SHA and PART bytes long, each end said why, and nothing was sent.
not_a_prefix() {
  assert_equal "$(sha_of "$T/file")" "$1"
  assert_equal "$(stat -c %s "$T/file")" "$PART"
  error_line_in "$T/c.err" "is not a prefix of stdin"
  error_line_in "$T/L.err" "is not a prefix of the sender's stdin.*left as it was"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .sent.bytes 0
  jq_is "$CJSON" .resumed_at null
}
