#!/usr/bin/env bash
# Builds the HLO parser fuzzer (ir/hlo_parser_fuzzer.cc) with clang, libFuzzer, ASan and UBSan,
# seeds its corpus from testdata/, and fuzzes for SECONDS (default 60) in one process.
#   tools/fuzz.sh            # 60 s (CI)
#   tools/fuzz.sh 1800       # 30 min
# Exits 0 when nothing was found, 1 on a finding (crash, leak, timeout, OOM, round-trip failure:
# the reproducer's path is printed; replay it with `build-fuzz/ir/hlo_parser_fuzzer FILE`),
# 2 on a set-up or build error. The last line is the summary (executions, exec/s, corpus size).
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_MAX_LEN (largest input, default 16384
# bytes: one computation of the small dumps, so mutations stay fast).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
seconds="${1:-60}"
build="${FUZZ_BUILD_DIR:-build-fuzz}"
max_len="${FUZZ_MAX_LEN:-16384}"
fail() {
  echo "fuzz.sh: $*" >&2
  exit 2
}
[[ "$seconds" =~ ^[0-9]+$ ]] || fail "SECONDS must be a whole number, got '$seconds'"

# clang and its libFuzzer/sanitizer runtimes, from Debian; `apt-get update` only when the install
# cannot find them in the package lists already present.
packages=(clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  [[ "$(id -u)" == 0 ]] || fail "need root to install ${missing[*]} (run with sudo)"
  echo "fuzz.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# Every library is instrumented for coverage and checked by the sanitizers; only the fuzzer
# executable links libFuzzer's main (-fsanitize=fuzzer, in ir/CMakeLists.txt).
sanitize="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$sanitize -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DSPMDSIM_FUZZ=ON -DSPMDSIM_TESTS=OFF -DSPMDSIM_WERROR=ON >"$build/configure.log" 2>&1 ||
  { tail -n 30 "$build/configure.log" >&2; fail "cmake failed"; }
if ! cmake --build "$build" --target hlo_parser_fuzzer >"$build/build.log" 2>&1; then
  grep -E -A 5 'error|FAILED' "$build/build.log" | head -n 40 >&2
  fail "build failed (see $build/build.log)"
fi
fuzzer="$build/ir/hlo_parser_fuzzer"

# Seeds from testdata; the corpus keeps what earlier runs found and takes in only the seeds that
# add coverage.
seeds="$build/seeds"
corpus="$build/corpus"
artifacts="$build/artifacts"
mkdir -p "$seeds" "$corpus" "$artifacts"
python3 tools/fuzz_seeds.py testdata "$seeds" --max-len "$max_len" 2>/dev/null ||
  fail "seeding failed"
"$fuzzer" -merge=1 -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$artifacts/" "$corpus" "$seeds" \
  >"$build/merge.log" 2>&1 || fail "merging the seeds failed (see $build/merge.log)"

# Findings land in $artifacts; only the ones from this run count.
before=$(mktemp)
trap 'rm -f "$before"' EXIT
ls "$artifacts" >"$before"
log="$build/fuzz.log"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
set +e
"$fuzzer" -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
  -dict=tools/hlo.dict -artifact_prefix="$artifacts/" -print_final_stats=1 -print_pcs=0 \
  "$corpus" >"$log" 2>&1
status=$?
set -e

# Executions: libFuzzer's final stats, or after a finding its last status line ("#123 ...").
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
[[ -n "$execs" ]] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
elapsed=$(grep -oE 'exec/s: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || true)
new_findings=$(comm -13 "$before" <(ls "$artifacts"))
if [[ $status -ne 0 || -n "$new_findings" ]]; then
  grep -E 'ERROR: |SUMMARY: |round-trip failure|runtime error' "$log" | head -n 5 >&2 || true
  for f in $new_findings; do echo "fuzz.sh: reproducer: $artifacts/$f" >&2; done
  echo "fuzz: FINDING after ${execs:-0} executions (libFuzzer exit $status); log: $log"
  exit 1
fi

# libFuzzer keeps every input it ever added; keep only those that still add coverage.
rm -rf "$corpus.min"
mkdir -p "$corpus.min"
if "$fuzzer" -merge=1 -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$artifacts/" "$corpus.min" "$corpus" >"$build/minimize.log" 2>&1; then
  rm -rf "$corpus"
  mv "$corpus.min" "$corpus"
fi
corpus_size=$(find "$corpus" -type f | wc -l)
corpus_kb=$(du -sk "$corpus" | cut -f1)
edges=$(grep -oE '[0-9]+ new coverage edges' "$build/minimize.log" | grep -oE '^[0-9]+' || true)
echo "fuzz: ${execs:-0} executions in ${seconds} s (${rate:-$elapsed} exec/s), corpus" \
  "$corpus_size inputs (${corpus_kb} KiB, ${edges:-?} edges), no findings; log: $log"
