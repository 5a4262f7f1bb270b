#!/usr/bin/env bash
# Regenerate corpus cells with the pinned JAX environments (tools/requirements/) into a temporary
# directory and fail if the committed corpus no longer matches what JAX/XLA writes.
#   tools/check_oracle.sh                 # CI: the fixed sample of cells, the RNG tables and the
#                                         # CUDA lowerings (about 3 min on 2 cores)
#   tools/check_oracle.sh --all           # every cell and the manifest (about 15 min)
#   tools/check_oracle.sh --only NAME ... # chosen cells (gen_dumps.py's selection flags)
# Needs network access to PyPI the first time (tools/setup_python.sh builds .venv).
# Third-party cells (flax examples) need their source: SPMDSIM_FLAX_SRC=/path/to/flax(.git);
# without it they are skipped (and left out of --all's comparison) with a message.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
start=$(date +%s)
tmp="$(mktemp -d "${TMPDIR:-/tmp}/spmdsim_oracle.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# Regenerates cells into $tmp/dumps and compares them with the committed ones.
compare_cells() {
  mkdir -p "$tmp/committed"
  for d in "$tmp/dumps"/*/; do
    name="$(basename "$d")"
    if [[ -d "$repo/testdata/dumps/$name" ]]; then
      cp -r "$repo/testdata/dumps/$name" "$tmp/committed/$name"
    fi
  done
  python3 "$here/oracle_compare.py" "$tmp/committed" "$tmp/dumps" "$@"
}

rc=0
if [[ "${1:-}" == "--all" ]]; then
  # Every cell of the matrix (about 15 min on 2 cores) and the manifest.
  "$here/setup_python.sh" --all
  python3 "$here/gen_dumps.py" --out "$tmp/dumps" --manifest "$tmp/manifest.json" || rc=1
  # Third-party cells are regenerated only when their source is given (SPMDSIM_FLAX_SRC=...,
  # see testdata/README.md "Third-party programs"); otherwise gen_dumps.py skips them with a
  # message and they are left out of the comparison here.
  skip=()
  for name in $(python3 "$here/gen_dumps.py" --print-unsourced); do skip+=(--skip "$name"); done
  python3 "$here/oracle_compare.py" "$repo/testdata/dumps" "$tmp/dumps" \
    --manifest "$repo/testdata/manifest.json" "$tmp/manifest.json" ${skip[@]+"${skip[@]}"} || rc=1
elif [[ $# -gt 0 ]]; then
  "$here/setup_python.sh" --all
  python3 "$here/gen_dumps.py" --out "$tmp/dumps" --no-manifest "$@" || rc=1
  compare_cells || rc=1
else
  # CI: a fixed sample, one cell per JAX version and platform (tools/gen_dumps.py SAMPLE).
  "$here/setup_python.sh" --all
  python3 "$here/gen_dumps.py" --out "$tmp/dumps" --no-manifest --sample || rc=1
  compare_cells || rc=1
fi
if [[ $# -eq 0 || "${1:-}" == "--all" ]]; then
  py="$repo/.venv/bin/python"
  # The JAX RNG answer tables (testdata/rng_tables) are part of the oracle too.
  "$here/check_rng_tables.sh" || rc=1
  # And the CUDA lowerings (testdata/gpu_lowered), printed by XLA without a GPU.
  # (compared as one "program" so that the checkout's path in the stack frames is normalized)
  mkdir -p "$tmp/gl_committed" "$tmp/gl_new"
  ln -s "$repo/testdata/gpu_lowered" "$tmp/gl_committed/gpu_lowered"
  "$py" "$here/gen_gpu_lowered.py" --out "$tmp/gl_new/gpu_lowered"
  python3 "$here/oracle_compare.py" "$tmp/gl_committed" "$tmp/gl_new" || {
    echo "check_oracle: testdata/gpu_lowered differs from tools/gen_gpu_lowered.py's output" \
      "(regenerate: .venv/bin/python tools/gen_gpu_lowered.py)" >&2
    rc=1
  }
fi
echo "check_oracle: $(( $(date +%s) - start ))s"
exit $rc
