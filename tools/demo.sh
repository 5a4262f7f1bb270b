#!/usr/bin/env bash
# One command from a fresh machine to a real analysis: install what is missing, build (Release),
# and run spmdsim on the real dump embedded in the binary (extra arguments go to spmdsim).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/tools/setup.sh"
BUILD_DIR="$repo/build" BUILD_TYPE=Release "$repo/tools/build.sh" >/dev/null
exec "$repo/build/analyzer/spmdsim" "$@"
