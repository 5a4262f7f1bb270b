#!/usr/bin/env bash
# Copy the two header-only libraries the harness needs (nlohmann/json, CLI11) from this machine's
# Debian packages into cuda_validate/.deps/include (git-ignored), for a GPU machine that lacks
# them. The device call then carries that folder:  carry: ["cuda_validate/.deps"].
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="$here/.deps/include"
mkdir -p "$dest"
for dir in nlohmann CLI; do
  if [[ ! -d "/usr/include/$dir" ]]; then
    echo "stage_headers.sh: /usr/include/$dir missing (apt-get install nlohmann-json3-dev libcli11-dev)" >&2
    exit 1
  fi
  rm -rf "${dest:?}/$dir"
  cp -r "/usr/include/$dir" "$dest/$dir"
done
echo "stage_headers.sh: staged $(du -sh "$dest" | cut -f1) of headers in $dest"
