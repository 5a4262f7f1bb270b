#!/usr/bin/env bash
# Regenerate testdata/rng_tables with the pinned JAX (tools/gen_rng_tables.py) into a temporary
# directory and fail if the committed tables differ from what JAX writes now (about 30 s).
#   tools/check_rng_tables.sh
# tools/check_oracle.sh runs this after the dump comparison.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
"$here/setup_python.sh"
py="$repo/.venv/bin/python"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/spmdsim_rng_tables.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

start=$(date +%s)
"$py" "$here/gen_rng_tables.py" --out "$tmp/rng_tables" >/dev/null
if diff -r -x "*.md" "$repo/testdata/rng_tables" "$tmp/rng_tables" >"$tmp/diff.txt"; then
  echo "check_rng_tables: testdata/rng_tables matches JAX $("$py" -c 'import jax; print(jax.__version__)') ($(( $(date +%s) - start ))s)"
  exit 0
fi
echo "check_rng_tables: testdata/rng_tables differs from what the pinned JAX writes:" >&2
head -n 40 "$tmp/diff.txt" >&2
echo "(regenerate with: .venv/bin/python tools/gen_rng_tables.py, and review the diff)" >&2
exit 1
