#!/usr/bin/env bash
# Builds spmdsim's libFuzzer targets with clang, libFuzzer, ASan and UBSan, seeds each target's
# corpus from testdata/, and fuzzes each for SECONDS (default 60) in one process.
#   tools/fuzz.sh                        # the HLO parser, 60 s (CI)
#   tools/fuzz.sh 1800                   # the HLO parser, 30 min
#   tools/fuzz.sh --target views 600     # one target
#   tools/fuzz.sh --all 30               # every target, one after another, 30 s each
#   tools/fuzz.sh --keep-going --all 120 # go on after a finding (libFuzzer's -fork=1 mode)
#
# Targets (docs/TESTING.md):
#   hlo_parser       ir/hlo_parser_fuzzer.cc: parser, printer round trip, sub-parsers
#   analyses         passes/analyses_fuzzer.cc: every analysis the commands run on a module
#   views            analyzer/views_fuzzer.cc: every view of every command, every JSON parsed back
#   companion_files  dump/companion_files_fuzzer.cc: dump/'s readers of XLA's buffer-assignment,
#                    live-range, memory-usage-report and memory_analysis.json files and of OOM
#                    logs, gzip, and the pairing of a companion file with its module (the first
#                    input byte chooses the reader)
#   command_inputs   analyzer/command_inputs_fuzzer.cc: the same files as the commands use them
#                    (rendered, `spmdsim oom -`), `check`'s baseline, topology files (the same
#                    first byte)
#
# Each target keeps its corpus, artifacts and logs in FUZZ_BUILD_DIR/<target>/. Exits 0 when
# nothing was found, 1 on a finding in any target (crash, leak, timeout, OOM, a failed check of
# the target: the reproducer's path is printed; replay it with `build-fuzz/<dir>/<target>_fuzzer
# FILE`), 2 on a set-up or build error. Each target's last line is its summary (executions,
# exec/s, corpus size, edges).
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_MAX_LEN (largest input, default 16384
# bytes: one computation of the small dumps, so mutations stay fast), FUZZ_TIMEOUT (seconds one
# input may take, default 10), FUZZ_KEEP_GOING=1 (as --keep-going).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
build="${FUZZ_BUILD_DIR:-build-fuzz}"
max_len="${FUZZ_MAX_LEN:-16384}"
timeout="${FUZZ_TIMEOUT:-10}"
keep_going="${FUZZ_KEEP_GOING:-}"
all_targets=(hlo_parser analyses views companion_files command_inputs)
fail() {
  echo "fuzz.sh: $*" >&2
  exit 2
}

targets=()
seconds=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --target)
      [[ $# -ge 2 ]] || fail "--target needs a NAME (${all_targets[*]})"
      targets+=("$2")
      shift 2
      ;;
    --target=*)
      targets+=("${1#--target=}")
      shift
      ;;
    --all)
      targets=("${all_targets[@]}")
      shift
      ;;
    --keep-going)
      keep_going=1
      shift
      ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
      exit 0
      ;;
    -*) fail "unknown option '$1' (usage: tools/fuzz.sh [--target NAME|--all] [--keep-going] [SECONDS])" ;;
    *)
      [[ -z "$seconds" ]] || fail "SECONDS given twice ('$seconds', '$1')"
      seconds="$1"
      shift
      ;;
  esac
done
seconds="${seconds:-60}"
[[ "$seconds" =~ ^[0-9]+$ ]] || fail "SECONDS must be a whole number, got '$seconds'"
[[ ${#targets[@]} -gt 0 ]] || targets=(hlo_parser)
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || fail "unknown target '$t' (${all_targets[*]})"
done

# Where each target's executable is built, and the dictionary of its input format.
executable() {
  case "$1" in
    hlo_parser) echo "$build/ir/hlo_parser_fuzzer" ;;
    analyses) echo "$build/passes/analyses_fuzzer" ;;
    companion_files) echo "$build/dump/$1_fuzzer" ;;
    views | command_inputs) echo "$build/analyzer/$1_fuzzer" ;;
  esac
}
dictionary() {
  case "$1" in
    companion_files | command_inputs) echo tools/companion.dict ;;
    *) echo tools/hlo.dict ;;
  esac
}

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
# executables link libFuzzer's main (-fsanitize=fuzzer, in the layers' CMakeLists.txt).
sanitize="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$sanitize -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DSPMDSIM_FUZZ=ON -DSPMDSIM_TESTS=OFF -DSPMDSIM_WERROR=ON >"$build/configure.log" 2>&1 ||
  { tail -n 30 "$build/configure.log" >&2; fail "cmake failed"; }
build_targets=()
for t in "${targets[@]}"; do build_targets+=("${t}_fuzzer"); done
if ! cmake --build "$build" --target "${build_targets[@]}" >"$build/build.log" 2>&1; then
  grep -E -A 5 'error|FAILED' "$build/build.log" | head -n 40 >&2
  fail "build failed (see $build/build.log)"
fi

# Seeds from testdata, written once per kind of input; a corpus keeps what earlier runs found and
# takes in only the seeds that add coverage.
seed_dir() {
  case "$1" in
    companion_files | command_inputs) echo "$build/seeds-companion" ;;
    *) echo "$build/seeds" ;;
  esac
}
seeded=" "
for t in "${targets[@]}"; do
  seeds=$(seed_dir "$t")
  [[ "$seeded" != *" $seeds "* ]] || continue
  seeded+="$seeds "
  extra=()
  [[ "$t" != companion_files && "$t" != command_inputs ]] || extra=(--companion)
  mkdir -p "$seeds"
  python3 tools/fuzz_seeds.py testdata "$seeds" --max-len "$max_len" "${extra[@]}" 2>/dev/null ||
    fail "seeding failed"
done
# The parser's corpus lived in $build/corpus and $build/artifacts before there were several
# targets.
if [[ -d "$build/corpus" && ! -d "$build/hlo_parser/corpus" ]]; then
  mkdir -p "$build/hlo_parser"
  mv "$build/corpus" "$build/hlo_parser/corpus"
  [[ -d "$build/artifacts" ]] && mv "$build/artifacts" "$build/hlo_parser/artifacts"
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
common=(-max_len="$max_len" -rss_limit_mb=2048 -timeout="$timeout")

# Fuzzes one target for $seconds; prints its summary line; returns 1 on a finding.
fuzz_target() {
  local target="$1"
  local fuzzer dir corpus artifacts log
  fuzzer=$(executable "$target")
  dir="$build/$target"
  corpus="$dir/corpus"
  artifacts="$dir/artifacts"
  log="$dir/fuzz.log"
  mkdir -p "$corpus" "$artifacts"
  "$fuzzer" -merge=1 "${common[@]}" -artifact_prefix="$artifacts/" "$corpus" "$(seed_dir "$target")" \
    >"$dir/merge.log" 2>&1 || fail "$target: merging the seeds failed (see $dir/merge.log)"

  # Findings land in $artifacts; only the ones from this run count.
  local before
  before=$(mktemp)
  ls "$artifacts" >"$before"
  local mode=()
  # -fork=1: a child process fuzzes, the parent restarts it after a finding and keeps the corpus.
  [[ -z "$keep_going" ]] || mode=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  local status=0
  "$fuzzer" "${mode[@]}" -max_total_time="$seconds" "${common[@]}" -dict="$(dictionary "$target")" \
    -artifact_prefix="$artifacts/" -print_final_stats=1 -print_pcs=0 "$corpus" >"$log" 2>&1 ||
    status=$?

  # Executions: libFuzzer's final stats, or after a finding (and in fork mode) its last status
  # line ("#123 ...").
  local execs rate elapsed new_findings
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  [[ -n "$execs" ]] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  # Fork mode prints no final stats, and its status lines' exec/s is the last job's.
  [[ -z "$keep_going" || -z "$execs" || "$seconds" -eq 0 ]] || rate=$((execs / seconds))
  elapsed=$(grep -oE 'exec/s:? [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || true)
  new_findings=$(comm -13 "$before" <(ls "$artifacts"))
  rm -f "$before"
  local found=0
  if [[ $status -ne 0 || -n "$new_findings" ]]; then
    found=1
    grep -E 'ERROR: |SUMMARY: |round-trip failure|fuzzer: |runtime error|what\(\): ' "$log" |
      sed -E 's/^==[0-9]+== ?//' | sort | uniq -c | sort -rn | head -n 10 >&2 || true
    for f in $new_findings; do echo "fuzz.sh: $target: reproducer: $artifacts/$f" >&2; done
    if [[ -z "$keep_going" ]]; then
      echo "fuzz: $target: FINDING after ${execs:-0} executions (libFuzzer exit $status); log: $log"
      return 1
    fi
  fi

  # libFuzzer keeps every input it ever added; keep only those that still add coverage.
  rm -rf "$corpus.min"
  mkdir -p "$corpus.min"
  if "$fuzzer" -merge=1 "${common[@]}" -artifact_prefix="$artifacts/" "$corpus.min" "$corpus" \
    >"$dir/minimize.log" 2>&1; then
    rm -rf "$corpus"
    mv "$corpus.min" "$corpus"
  fi
  local corpus_size corpus_kb edges result
  corpus_size=$(find "$corpus" -type f | wc -l)
  corpus_kb=$(du -sk "$corpus" | cut -f1)
  edges=$(grep -oE '[0-9]+ new coverage edges' "$dir/minimize.log" | grep -oE '^[0-9]+' || true)
  result="no findings"
  [[ $found -eq 0 ]] || result="$(wc -w <<<"$new_findings") findings (libFuzzer exit $status)"
  echo "fuzz: $target: ${execs:-0} executions in ${seconds} s (${rate:-$elapsed} exec/s), corpus" \
    "$corpus_size inputs (${corpus_kb} KiB, ${edges:-?} edges), $result; log: $log"
  return $found
}

overall=0
for t in "${targets[@]}"; do
  fuzz_target "$t" || overall=1
done
exit $overall
