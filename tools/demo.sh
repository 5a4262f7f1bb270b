#!/usr/bin/env bash
# One command from a fresh machine to a real analysis: install what is missing, build the spmdsim
# binary alone (Release; no tests), and run it on the real dump embedded in it: the seed user's
# training step compiled for 8 H100s (extra arguments go to spmdsim instead).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build"
"$repo/tools/setup.sh"
if [[ ! -x "$build/analyzer/spmdsim" ]]; then
  echo "demo: building spmdsim (Release, the binary only; a few minutes the first time)" >&2
fi
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# ninja's progress ("[12/160] Building CXX object ...") goes to stderr, the analysis to stdout.
ninja -C "$build" spmdsim >&2
[[ $# -eq 0 ]] && echo "demo: spmdsim analyze on the embedded dump (tools/demo.sh ARGS runs spmdsim ARGS)" >&2
exec "$build/analyzer/spmdsim" "$@"
