#!/usr/bin/env bash
# Regenerate every program of testdata/dumps with the pinned JAX (tools/requirements.txt) into a
# temporary directory and fail if the committed corpus no longer matches what JAX/XLA writes.
#   tools/check_oracle.sh                 # all programs and the RNG tables (about 2 min on 2 cores)
#   tools/check_oracle.sh --only NAME ... # a subset (manifest not compared)
# Needs network access to PyPI the first time (tools/setup_python.sh builds .venv).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
"$here/setup_python.sh"
py="$repo/.venv/bin/python"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/spmdsim_oracle.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

start=$(date +%s)
if [[ $# -gt 0 ]]; then
  "$py" "$here/gen_dumps.py" --out "$tmp/dumps" --no-manifest "$@"
  mkdir -p "$tmp/committed"
  for d in "$tmp/dumps"/*/; do
    name="$(basename "$d")"
    if [[ -d "$repo/testdata/dumps/$name" ]]; then
      cp -r "$repo/testdata/dumps/$name" "$tmp/committed/$name"
    fi
  done
  set +e
  "$py" "$here/oracle_compare.py" "$tmp/committed" "$tmp/dumps"
  rc=$?
else
  "$py" "$here/gen_dumps.py" --out "$tmp/dumps" --manifest "$tmp/manifest.json"
  set +e
  "$py" "$here/oracle_compare.py" "$repo/testdata/dumps" "$tmp/dumps" \
    --manifest "$repo/testdata/manifest.json" "$tmp/manifest.json"
  rc=$?
  # The JAX RNG answer tables (testdata/rng_tables) are part of the oracle too.
  "$here/check_rng_tables.sh" || rc=1
  # And the CUDA lowerings (testdata/gpu_lowered), printed by XLA without a GPU.
  # (compared as one "program" so that the checkout's path in the stack frames is normalized)
  mkdir -p "$tmp/gl_committed" "$tmp/gl_new"
  ln -s "$repo/testdata/gpu_lowered" "$tmp/gl_committed/gpu_lowered"
  "$py" "$here/gen_gpu_lowered.py" --out "$tmp/gl_new/gpu_lowered"
  "$py" "$here/oracle_compare.py" "$tmp/gl_committed" "$tmp/gl_new" || {
    echo "check_oracle: testdata/gpu_lowered differs from tools/gen_gpu_lowered.py's output" \
      "(regenerate: .venv/bin/python tools/gen_gpu_lowered.py)" >&2
    rc=1
  }
fi
echo "check_oracle: $(( $(date +%s) - start ))s"
exit $rc
