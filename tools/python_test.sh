#!/usr/bin/env bash
# The Python package (pyproject.toml, python/spmdsim): build it with pip, install it into a fresh
# venv per tested JAX version, and run its pytest tests (python/tests) there.
#   tools/python_test.sh [BUILD_DIR]
# BUILD_DIR (default build/python/py3-none-linux_x86_64): the CMake tree pip builds in. tools/test.sh
# passes its Release tree, configured as pip configures it, so that nothing is compiled twice.
#
# Each venv is new and empty of build tools: the JAX environment's pinned packages
# (tools/setup_python.sh, tools/requirements/<env>.txt) are made visible to it through a .pth file,
# pytest comes from tools/requirements-pytest.txt (not in tools/requirements/, whose every file is
# a JAX environment for tools/setup_python.sh --all), and spmdsim from pip: `pip install .` in the
# newest environment, the wheel of `pip wheel .` in the others.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
build_dir="${1:-build/python/py3-none-linux_x86_64}"
envs=(jax0.12.0.1 jax0.10.2 jax0.4.30)
work="$repo/build/python-test"
rm -rf "$work"
mkdir -p "$work"

tools/setup_python.sh --env jax0.12.0.1 --env jax0.10.2 --env jax0.4.30
venv_of() { if [[ "$1" == "jax0.10.2" ]]; then echo "$repo/.venv"; else echo "$repo/.venv-$1"; fi; }

# pip's build settings: the same CMake options as the tree in $build_dir was configured with, so
# that CMake reconfigures nothing and ninja finds the binary up to date.
cfg=(-C "build-dir=$build_dir")
if [[ -f "$build_dir/CMakeCache.txt" ]]; then
  for opt in SPMDSIM_TESTS SPMDSIM_WERROR SPMDSIM_CUDA CMAKE_CXX_COMPILER; do
    val=$(sed -n "s/^$opt:[A-Z]*=//p" "$build_dir/CMakeCache.txt")
    [[ -n "$val" ]] && cfg+=(-C "cmake.define.$opt=$val")
  done
fi

site_packages() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }

start=$(date +%s)
"$(venv_of "${envs[0]}")/bin/python" -m pip wheel --no-deps -q -w "$work/dist" "${cfg[@]}" .
wheel=$(ls "$work"/dist/spmdsim-*.whl)
echo "python_test: built $(basename "$wheel") in $(( $(date +%s) - start )) s"

rc=0
for env in "${envs[@]}"; do
  base="$(venv_of "$env")/bin/python"
  venv="$work/venv-$env"
  "$base" -m venv "$venv"
  echo "$(site_packages "$base")" > "$(site_packages "$venv/bin/python")/_jax_env.pth"
  "$venv/bin/python" -m pip install -q --no-deps -r tools/requirements-pytest.txt
  if [[ "$env" == "${envs[0]}" ]]; then
    "$venv/bin/python" -m pip install -q --no-deps "${cfg[@]}" .
  else
    "$venv/bin/python" -m pip install -q --no-deps "$wheel"
  fi
  # The package as installed, not the checkout: run from outside the repository's python/.
  echo "python_test: $env"
  # The newest environment has both plugins: its GPU and TPU targets are required, and its CPU
  # what-ifs left to the older environments. The corpus cells (typed objects against the binary's
  # JSON, no JAX involved) run there alone. CI time, not coverage.
  required="" select=(-k "not test_corpus_cell")
  if [[ "$env" == "${envs[0]}" ]]; then
    required="gpu,tpu"
    select=(-k "not (test_rows_equal_separate_compiles and cpu)")
  fi
  (cd "$work" && SPMDSIM_REQUIRE_TARGETS="$required" "$venv/bin/python" -m pytest -q \
     -p no:cacheprovider "${select[@]}" --rootdir "$repo/python/tests" "$repo/python/tests") || rc=1
done
echo "python_test: $(( $(date +%s) - start )) s"
exit $rc
