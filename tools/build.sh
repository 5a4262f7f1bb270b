#!/usr/bin/env bash
# Configures and builds spmdsim. BUILD_DIR (default build), BUILD_TYPE (default Release), and any
# extra CMake arguments are passed through:  tools/build.sh -DSPMDSIM_SANITIZE=ON
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "$@" >/dev/null
ninja -C "$build"
