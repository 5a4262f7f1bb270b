#!/usr/bin/env bash
# One command from a fresh machine to every test passing: installs what is missing, builds with
# warnings as errors, runs the unit and golden tests (ctest), the same tests under ASan+UBSan,
# every fuzzer for 30 s (tools/fuzz.sh --all, docs/TESTING.md), the Python package's tests
# (tools/python_test.sh: pip install, pytest per JAX version) and the oracle check that
# regenerates testdata with the pinned JAX.
#   tools/test.sh            # everything (CI)
#   QUICK=1 tools/test.sh    # unit and golden tests only
#   FREE_DISK=1 tools/test.sh  # (.ci/run) delete each build tree once its stage is done, so that
#                              # the oracle's JAX environments (several GB) fit on a small disk
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
step() { printf '\n== %s ==\n' "$*"; }
# Free space where the builds and environments go, printed at each stage so that a run that
# runs out of disk says so (and how much each stage left).
disk() { df -Ph . | awk 'NR == 2 { print "disk: " $4 " free of " $2 " on " $6 }'; }
# With FREE_DISK set, a build tree no later stage needs goes as soon as its stage is done.
done_with() { if [[ -n "${FREE_DISK:-}" ]]; then rm -rf "$@"; disk; fi; }

step "dependencies"
disk
tools/setup.sh --report

step "build (Release, -Werror)"
BUILD_DIR=build-test BUILD_TYPE=Release tools/build.sh -DSPMDSIM_WERROR=ON

step "tests"
ctest --test-dir build-test --output-on-failure -j2 | tee build-test/ctest.log
# ctest's own summary, remembered for the closing line.
summary=$(grep -E '[0-9]+% tests passed' build-test/ctest.log | tail -n 1)
total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
failed=$(sed -E 's/.*, ([0-9]+) tests failed.*/\1/' <<<"$summary")

if [[ -n "${QUICK:-}" ]]; then
  echo "tests: $((total - failed)) passed, $failed failed"
  exit 0
fi

step "scale test: 200k instructions, 1,024 devices, calls 60 deep; 100k-wide tuples; 100k temporaries dying at one concatenate; a 10,000-operand all-reduce; 50k donated parameters; every command in 10 s, 2 GiB"
python3 tools/scale_test.py --spmdsim build-test/analyzer/spmdsim

step "tests under AddressSanitizer + UndefinedBehaviorSanitizer"
# -O1 -g1 (line tables) keeps the sanitizer build's compile time down; the CUDA harness is
# built and tested by the Release stage (its host code is the same CPU reference path).
BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo tools/build.sh -DSPMDSIM_WERROR=ON \
  -DSPMDSIM_SANITIZE=ON -DSPMDSIM_CUDA=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1"
ctest --test-dir build-asan --output-on-failure -j2
done_with build-asan

if [[ -x tools/fuzz.sh ]]; then
  step "fuzzers: parser, analyses, views, companion files, command inputs; 30 s each"
  tools/fuzz.sh --all 30
  done_with build-fuzz
fi

step "Python package: pip builds it from the Release tree, a fresh venv per JAX version, pytest (docs/PYTHON.md)"
tools/python_test.sh build-test

step "oracle: regenerate testdata with the pinned JAX and compare"
disk
tools/check_oracle.sh

echo
echo "tests: $((total - failed)) passed, $failed failed"
