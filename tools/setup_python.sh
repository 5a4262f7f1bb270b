#!/usr/bin/env bash
# Create the pinned JAX environments that tools/ uses to make and check the corpus, one venv per
# JAX version, from tools/requirements/<env>.txt (exact pins; its "# python:" line says which
# interpreters it accepts).
#   tools/setup_python.sh                    # jax0.10.2 in .venv (the default environment)
#   tools/setup_python.sh --env jax0.12.0.1  # one environment (repeatable)
#   tools/setup_python.sh --all              # every environment
# Idempotent: a stamp (sha256 of the requirements and the interpreter version) makes a second
# run a no-op. The interpreter: python3.X on PATH, else pyenv's (the image of this machine kind
# ships 3.11 as python3 and 3.12/3.13 under ~/.pyenv/versions), else Debian's python3.X package.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"

venv_dir() {  # env name -> venv folder
  if [[ "$1" == "jax0.10.2" ]]; then echo "$repo/.venv"; else echo "$repo/.venv-$1"; fi
}

find_python() {  # versions... -> path of a working interpreter
  local v p
  for v in "$@"; do
    for p in "$(command -v "python$v" 2>/dev/null || true)" \
             $(ls -d "$HOME"/.pyenv/versions/"$v".*/bin/"python$v" 2>/dev/null | sort -rV) \
             "/usr/bin/python$v"; do
      [[ -n "$p" && -x "$p" ]] || continue
      # pyenv's shims exist for versions that are not active and then fail: run it to be sure.
      if "$p" -c 'import sys' >/dev/null 2>&1; then echo "$p"; return 0; fi
    done
  done
  for v in "$@"; do
    if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]] &&
       apt-cache show "python$v-venv" >/dev/null 2>&1; then
      echo "setup_python.sh: installing python$v from Debian" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
        "python$v-venv" >/dev/null && { echo "/usr/bin/python$v"; return 0; }
    fi
  done
  return 1
}

setup_env() {
  local env="$1" req="$here/requirements/$1.txt"
  [[ -f "$req" ]] || { echo "setup_python.sh: no $req" >&2; exit 2; }
  local venv; venv="$(venv_dir "$env")"
  local versions; versions=$(sed -n 's/^# python: *//p' "$req")
  local py
  py=$(find_python $versions) || {
    echo "setup_python.sh: $env needs Python $versions; none found (install one, or pyenv install $versions)" >&2
    exit 2
  }
  local want; want="$(sha256sum "$req" | cut -d' ' -f1) $("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  local stamp="$venv/.requirements.sha256"
  if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  if ! "$py" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    # Debian splits venv/ensurepip into python3-venv.
    if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
      echo "setup_python.sh: installing python3-venv" >&2
      apt-get update -qq -o DPkg::Lock::Timeout=600
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 python3-venv >/dev/null
    else
      echo "setup_python.sh: $py lacks venv/ensurepip (install python3-venv)" >&2
      exit 1
    fi
  fi
  rm -rf "$venv"
  "$py" -m venv "$venv"
  # --no-cache-dir: the wheels (libtpu and the CUDA plugin are hundreds of MB) would otherwise be
  # kept a second time in pip's cache; a CI machine may not have the disk for both.
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-cache-dir -q -r "$req"
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
}

envs=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --env) envs+=("$2"); shift 2 ;;
    --all) for f in "$here"/requirements/*.txt; do envs+=("$(basename "$f" .txt)"); done; shift ;;
    *) echo "usage: tools/setup_python.sh [--env NAME]... [--all]" >&2; exit 2 ;;
  esac
done
[[ ${#envs[@]} -gt 0 ]] || envs=(jax0.10.2)
for e in "${envs[@]}"; do setup_env "$e"; done
