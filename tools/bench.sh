#!/usr/bin/env bash
# Parser and analysis speed on the two ~100 MB benchmark modules (the parser's speed depends on the
# shape of the text), side by side with md5sum of the same file and XLA's own HLO text parser
# (through the pinned jaxlib), on one core (taskset -c 0).
#
#   tools/bench.sh                         # build, generate the modules if missing, print the tables
#   tools/bench.sh --shape pytorch-bert    # one module only (repeatable; default: both)
#   tools/bench.sh --command stats --command "analyze --json"   # time these subcommands end to end
#   tools/bench.sh --write-doc             # also rewrite docs/BENCHMARKS.md from this run
#
# Modules (tools/make_big_module.py --shape, written to build-bench/ when missing):
#   jax-train-step  build-bench/big_module.txt               the JAX dump repeated, 104 MB
#   pytorch-bert    build-bench/big_module_pytorch_bert.txt  PyTorch/XLA's BERT step repeated, 96 MB
# Options: --module FILE (any other module instead; not with --write-doc), --reps N (best of N;
# default 3), --build DIR (binaries from DIR/analyzer/spmdsim and DIR/tools/spmdsim_bench_parse,
# e.g. an older build to compare with; implies --no-build), --no-xla, --no-build, --write-doc.
#
# Figures: "cpu s" is user+sys CPU time of the process (what one core spends; steady when other
# work shares the machine), "wall s" the elapsed time; MB/s is 10^6 bytes of text per CPU second.
# Peak RSS is /usr/bin/time's %M of a run that does the work once. The targets (docs/BENCHMARKS.md):
# parse >= 300 MB/s on both modules, >= 10x XLA's parser, peak RSS < 3x the file size.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
build="$repo/build-bench"
module=""
shapes=()
reps=3
xla=1
do_build=1
write_doc=0
commands=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --module) module="$2"; shift 2 ;;
    --shape) shapes+=("$2"); shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --command) commands+=("$2"); shift 2 ;;
    --build) build="$(cd "$2" && pwd)"; do_build=0; shift 2 ;;
    --no-xla) xla=0; shift ;;
    --no-build) do_build=0; shift ;;
    --write-doc) write_doc=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ ${#commands[@]} -gt 0 ]] || commands=("stats")
[[ ${#shapes[@]} -gt 0 ]] || shapes=(jax-train-step pytorch-bert)
if [[ -n "$module" && $write_doc == 1 ]]; then
  echo "bench.sh: --write-doc documents the benchmark modules; drop --module" >&2; exit 2
fi
shape_file() {
  case "$1" in
    jax-train-step) echo "$repo/build-bench/big_module.txt" ;;
    pytorch-bert) echo "$repo/build-bench/big_module_pytorch_bert.txt" ;;
    *) echo "bench.sh: unknown shape $1 (jax-train-step, pytorch-bert)" >&2; exit 2 ;;
  esac
}
for s in "${shapes[@]}"; do shape_file "$s" >/dev/null; done

if [[ ! -x /usr/bin/time ]]; then
  if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    echo "bench.sh: installing GNU time" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
  else
    echo "bench.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2
  fi
fi
pin=()
command -v taskset >/dev/null 2>&1 && pin=(taskset -c 0)

if [[ $do_build == 1 ]]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$build" spmdsim spmdsim_bench_parse >/dev/null
fi
spmdsim="$build/analyzer/spmdsim"
bench_parse="$build/tools/spmdsim_bench_parse"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/spmdsim_bench.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# XLA's parser: jaxlib exposes it as jax._src.lib.hlo.hlo_module_from_text (a nanobind binding of
# ParseAndReturnUnverifiedModule). Timed inside Python around that call only; peak RSS of the
# process, and of the same process without the parse (Python + jaxlib + the text) for the delta.
py=""
if [[ $xla == 1 ]]; then
  if "$here/setup_python.sh" >&2 && [[ -x "$repo/.venv/bin/python" ]]; then
    py="$repo/.venv/bin/python"
  fi
  cat >"$tmp/xla.py" <<'PY'
import sys, time
from jax._src.lib import hlo
path, reps, parse = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
with open(path) as f:
    text = f.read()
best_cpu = best_wall = float("inf")
for _ in range(reps if parse else 0):
    c0, w0 = time.process_time(), time.perf_counter()
    module = hlo.hlo_module_from_text(text)
    c1, w1 = time.process_time(), time.perf_counter()
    best_cpu, best_wall = min(best_cpu, c1 - c0), min(best_wall, w1 - w0)
    del module
print("xla cpu_s=%.3f wall_s=%.3f" % (best_cpu, best_wall))
PY
fi

# timed LABEL CMD...: runs CMD reps times under /usr/bin/time; sets best_cpu, best_wall (seconds)
# and rss_kb (the largest peak RSS), and rc (the last exit status).
timed() {
  local label="$1"; shift
  best_cpu=""; best_wall=""; rss_kb=0; rc=0
  for ((i = 0; i < reps; ++i)); do
    set +e
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/$label.time" "${pin[@]}" "$@" >"$tmp/$label.out" 2>"$tmp/$label.err"
    rc=$?
    set -e
    read -r wall user sys rss <"$tmp/$label.time"
    local cpu
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')
    if [[ -z "$best_cpu" ]] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then
      best_cpu=$cpu
    fi
    if [[ -z "$best_wall" ]] || awk -v a="$wall" -v b="$best_wall" 'BEGIN { exit !(a < b) }'; then
      best_wall=$wall
    fi
    if (( rss > rss_kb )); then rss_kb=$rss; fi
  done
}

rate() { awk -v b="$bytes" -v s="$1" 'BEGIN { if (s > 0) printf "%.1f", b / 1e6 / s; else print "-" }'; }
rss_mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k * 1024 / 1e6 }'; }
rss_x() { awk -v k="$1" -v b="$bytes" 'BEGIN { printf "%.2f", k * 1024 / b }'; }
vs() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.1f", a / b; else print "-" }'; }
verdict() { awk -v v="$1" -v t="$2" -v le="${3:-0}" 'BEGIN { if (v == "-" || v == "") print "n/a"; else if ((le && v + 0 < t + 0) || (!le && v + 0 >= t + 0)) print "met"; else print "NOT met" }'; }

# bench_module NAME FILE: measures one module; writes $tmp/NAME.table (Markdown), NAME.summary and
# NAME.about (one line: the file, its size and instruction count).
bench_module() {
  local name="$1" file="$2"
  bytes=$(stat -c %s "$file")
  local mb
  mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')
  local rows=()   # "name|cpu s|wall s|MB/s|peak RSS MB|RSS / file|note"

  # md5sum: the floor for reading the bytes once.
  timed md5 md5sum "$file"
  rows+=("md5sum|$best_cpu|$best_wall|$(rate "$best_cpu")|$(rss_mb "$rss_kb")|$(rss_x "$rss_kb")|reads the file once")
  local md5_rate md5_cpu=$best_cpu
  md5_rate=$(rate "$best_cpu")

  # spmdsim's parser alone: best of reps parses inside one process, then one parse for peak RSS.
  "${pin[@]}" "$bench_parse" "$file" --reps "$reps" >"$tmp/parse.out"
  kv() { sed -n 's/.*[[:space:]]'"$1"'=\([^[:space:]]*\).*/\1/p' "$tmp/parse.out"; }
  local instructions parse_cpu parse_wall read_parse_cpu read_parse_wall
  instructions=$(kv instructions)
  parse_cpu=$(kv parse_cpu_s); parse_wall=$(kv parse_wall_s)
  read_parse_cpu=$(kv read_parse_cpu_s); read_parse_wall=$(kv read_parse_wall_s)
  # A fresh process parsing once, as spmdsim does: its first parse also pays the page faults that
  # give the IR its memory (later parses in one process reuse freed memory).
  local reps_saved=$reps; reps=1
  timed parse_rss "$bench_parse" "$file" --reps 1
  reps=$reps_saved
  local parse_rss_kb=$rss_kb cold_cpu cold_wall parse_rate
  cold_cpu=$(sed -n 's/.*[[:space:]]parse_cpu_s=\([^[:space:]]*\).*/\1/p' "$tmp/parse_rss.out")
  cold_wall=$(sed -n 's/.*[[:space:]]parse_wall_s=\([^[:space:]]*\).*/\1/p' "$tmp/parse_rss.out")
  parse_rate=$(rate "$parse_cpu")
  rows+=("spmdsim parse (text in memory)|$parse_cpu|$parse_wall|$parse_rate|-|-|spmdsim_bench_parse, best of $reps in one process")
  rows+=("spmdsim parse, first in a fresh process|$cold_cpu|$cold_wall|$(rate "$cold_cpu")|-|-|includes the page faults for the IR")
  rows+=("spmdsim read+parse|$read_parse_cpu|$read_parse_wall|$(rate "$read_parse_cpu")|$(rss_mb "$parse_rss_kb")|$(rss_x "$parse_rss_kb")|peak RSS: text + IR")

  # spmdsim subcommands end to end (start, read, parse, analyse, print, exit).
  per_minstr() { awk -v s="$1" -v n="$instructions" 'BEGIN { printf "%.3f", s / (n / 1e6) }'; }
  local c stats_line=""
  for c in "${commands[@]}"; do
    read -r -a words <<<"$c"
    timed cmd "$spmdsim" "${words[@]}" "$file"
    local note
    note="$(per_minstr "$best_cpu") cpu s per M instructions; $(vs "$best_cpu" "$md5_cpu")x md5sum"
    [[ $rc == 0 ]] || note="exit $rc: $(head -c 120 "$tmp/cmd.err" | tr '\n' ' ')"
    rows+=("spmdsim $c (end to end)|$best_cpu|$best_wall|$(rate "$best_cpu")|$(rss_mb "$rss_kb")|$(rss_x "$rss_kb")|$note")
    if [[ "$c" == "stats" && $rc == 0 ]]; then
      stats_line="- stats end to end: $best_cpu cpu s, $(vs "$best_cpu" "$md5_cpu")x md5sum's CPU time ($(rate "$best_cpu") MB/s)"
    fi
  done

  local xla_rate=""
  if [[ -n "$py" ]]; then
    "${pin[@]}" "$py" "$tmp/xla.py" "$file" "$reps" 1 >"$tmp/xla.out" 2>"$tmp/xla.err" || true
    local xla_cpu xla_wall
    xla_cpu=$(sed -n 's/.*cpu_s=\([^ ]*\).*/\1/p' "$tmp/xla.out")
    xla_wall=$(sed -n 's/.*wall_s=\([^ ]*\).*/\1/p' "$tmp/xla.out")
    if [[ -n "$xla_cpu" && "$xla_cpu" != "inf" ]]; then
      reps_saved=$reps; reps=1
      timed xla_rss "$py" "$tmp/xla.py" "$file" 1 1
      local xla_rss_kb=$rss_kb
      timed xla_base "$py" "$tmp/xla.py" "$file" 1 0
      local xla_base_kb=$rss_kb
      reps=$reps_saved
      xla_rate=$(rate "$xla_cpu")
      local delta_kb=$((xla_rss_kb - xla_base_kb))
      rows+=("XLA hlo_module_from_text (jaxlib $("$py" -c 'import jaxlib; print(jaxlib.__version__)'))|$xla_cpu|$xla_wall|$xla_rate|$(rss_mb "$xla_rss_kb")|$(rss_x "$xla_rss_kb")|parse adds $(rss_mb "$delta_kb") MB ($(rss_x "$delta_kb")x) over Python+jaxlib+text ($(rss_mb "$xla_base_kb") MB)")
    else
      rows+=("XLA hlo_module_from_text|-|-|-|-|-|failed: $(head -c 160 "$tmp/xla.err" | tr '\n' ' ')")
    fi
  elif [[ $xla == 1 ]]; then
    rows+=("XLA hlo_module_from_text|-|-|-|-|-|skipped: tools/setup_python.sh failed")
  fi

  {
    echo "| | cpu s | wall s | MB/s | peak RSS MB | RSS / file | |"
    echo "|---|---:|---:|---:|---:|---:|---|"
    local r
    for r in "${rows[@]}"; do echo "| ${r} |"; done
  } >"$tmp/$name.table"
  {
    local x_xla x_rss
    x_xla=$(vs "$parse_rate" "$xla_rate")
    x_rss=$(rss_x "$parse_rss_kb")
    echo "- parse: $parse_rate MB/s on one core ($(rate "$cold_cpu") MB/s for the first parse in a fresh process); target >= 300 MB/s: $(verdict "$parse_rate" 300) ($(vs "$parse_rate" 300)x the target; md5sum: $md5_rate MB/s)"
    [[ -z "$stats_line" ]] || echo "$stats_line"
    echo "- vs XLA's parser: ${x_xla}x; target >= 10x: $(verdict "$x_xla" 10)"
    echo "- peak RSS (read+parse): ${x_rss}x the file; target < 3x: $(verdict "$x_rss" 3 1)"
  } >"$tmp/$name.summary"
  echo "\`$(realpath --relative-to="$repo" "$file" 2>/dev/null || echo "$file")\`, $mb MB, $instructions instructions" >"$tmp/$name.about"
}

names=()
if [[ -n "$module" ]]; then
  names=(custom)
  bench_module custom "$module"
else
  for s in "${shapes[@]}"; do
    f=$(shape_file "$s")
    if [[ ! -f "$f" ]]; then
      python3 "$here/make_big_module.py" --shape "$s" --output "$f" >&2
    fi
    names+=("$s")
    bench_module "$s" "$f"
  done
fi

cmdline="tools/bench.sh"
if [[ -z "$module" && ${#shapes[@]} -lt 2 ]]; then
  for s in "${shapes[@]}"; do cmdline+=" --shape $s"; done
fi
for c in "${commands[@]}"; do
  if [[ "$c" == *" "* ]]; then cmdline+=" --command '$c'"; else cmdline+=" --command $c"; fi
done
cmdline+=" --reps $reps"
[[ $xla == 1 ]] || cmdline+=" --no-xla"
[[ $write_doc == 0 ]] || cmdline+=" --write-doc"

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
machine="$cpu_model, $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM, $(uname -sr), $(c++ --version | head -1)"
echo "command: $cmdline"
echo "machine: $machine"
echo "pinned: ${pin[*]:-(no taskset)}, best of $reps; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in "${names[@]}"; do
  echo
  echo "== $n: $(cat "$tmp/$n.about")"
  cat "$tmp/$n.table"
  echo
  cat "$tmp/$n.summary"
done

if [[ $write_doc == 1 ]]; then
  doc="$repo/docs/BENCHMARKS.md"
  # Everything from this marker on is kept as it is (sections measured by other means).
  marker="<!-- Sections below are not written by tools/bench.sh; --write-doc keeps them. -->"
  kept=""
  if [[ -f "$doc" ]] && grep -qxF -- "$marker" "$doc"; then
    kept="$(awk -v m="$marker" 'found || $0 == m { found = 1; print }' "$doc")"
  fi
  {
    cat <<EOF
# Benchmarks

Written by \`tools/bench.sh --write-doc\` (do not edit by hand above the marker; rerun it). The
parser's speed depends on the shape of the text, so there are two modules, both made by
\`tools/make_big_module.py\` (renamed copies of a real dump, valid HLO that XLA parses too):

- \`--shape jax-train-step\`: the seed_dp8_partitionable_remat JAX training step repeated as one
  deeper program until it passes 100 MB (renamed copies of every computation, the entry's copies
  chained through the parameters the step aliases to its outputs). Long lines (~210 bytes per
  instruction), most of them metadata; ~38k small computations.
- \`--shape pytorch-bert\`: the HLO PyTorch/XLA hands to XLA for a BERT training step
  (\`testdata/bench/\`, transformers' BertForMaskedLM, forward + backward + SGD) repeated to 96 MB.
  Short lines (~80 bytes per instruction, no metadata) in one flat ENTRY graph of over a million
  instructions.

Targets (issue #14): the parser at >= 300 MB/s on one core on both modules, and >= 10x XLA's own
parser; peak RSS of read + parse under 3x the file size.

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: $machine
- command: \`$cmdline\`
- conditions: ${pin[*]:-no taskset}, best of $reps; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)

"cpu s" is user+sys CPU time (one core's work, steadier than wall time when other jobs share the
machine, though not immune to them: they share its caches); "wall s" is elapsed time; MB/s is
10^6 bytes of text per CPU second. "spmdsim parse" is \`spmdsim_bench_parse\` (tools/bench_parse.cc):
the parse of text already in memory, timed inside the process. Peak RSS is GNU time's %M for one
run; for spmdsim read+parse it is the text plus the IR.
EOF
    for n in "${names[@]}"; do
      echo
      echo "## $n: $(cat "$tmp/$n.about")"
      echo
      cat "$tmp/$n.table"
      echo
      cat "$tmp/$n.summary"
    done
    echo
    if [[ -n "$kept" ]]; then
      printf '%s\n' "$kept"
    else
      echo "$marker"
    fi
  } >"$doc"
  echo
  echo "wrote $doc"
fi
