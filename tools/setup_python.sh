#!/usr/bin/env bash
# Create $REPO/.venv with the pinned JAX toolchain from tools/requirements.txt.
# Idempotent: a stamp file holding the sha256 of requirements.txt (and the interpreter version)
# makes a second run a fast no-op. Set PYTHON=... to choose the interpreter (default python3).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
req="$here/requirements.txt"
venv="$repo/.venv"
stamp="$venv/.requirements.sha256"
py="${PYTHON:-python3}"

want="$(sha256sum "$req" | cut -d' ' -f1) $("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi

if ! "$py" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  # Debian splits venv/ensurepip into python3-venv.
  if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    echo "setup_python.sh: installing python3-venv" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  else
    echo "setup_python.sh: $py lacks venv/ensurepip (install python3-venv)" >&2
    exit 1
  fi
fi

if [[ ! -x "$venv/bin/python" ]]; then
  "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req"
# Fail loudly if the environment does not match the pins exactly.
"$venv/bin/python" - "$req" <<'PY'
import importlib.metadata as md, sys
bad = []
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    name, ver = line.split("==")
    have = md.version(name)
    if have != ver:
        bad.append("%s: want %s, have %s" % (name, ver, have))
if bad:
    sys.exit("setup_python.sh: version mismatch: " + "; ".join(bad))
PY
echo "$want" > "$stamp"
echo "setup_python.sh: $venv ready ($("$venv/bin/python" -c 'import jax; print("jax", jax.__version__)'))" >&2
