#!/usr/bin/env bash
# Installs the Debian packages spmdsim builds and tests with, when any is missing. Idempotent and
# quiet when everything is present. Run as root (CI and fresh machines are root).
#   tools/setup.sh            # build + test dependencies
#   tools/setup.sh --report   # also chromium for the HTML report tests
set -euo pipefail

packages=(cmake ninja-build g++ libboost-graph-dev libfmt-dev nlohmann-json3-dev catch2
          libcli11-dev zlib1g-dev python3-venv clang-format)
if [[ "${1:-}" == "--report" ]]; then packages+=(chromium); fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then exit 0; fi

echo "setup.sh: installing ${missing[*]}" >&2
if [[ "$(id -u)" != 0 ]]; then
  echo "setup.sh: need root to install packages (run with sudo)" >&2
  exit 2
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
