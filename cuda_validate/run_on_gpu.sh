#!/usr/bin/env bash
# Build the CUDA harness for sm_90 and run the whole validation: the four lowerings of a dropout
# site on one device's shard, bytes against spmdsim's formulas, bits against the CPU reference,
# throughput against the device's peaks. About a minute on an H200 (build included).
#
#   cuda_validate/run_on_gpu.sh     # results under $OUT when set, else build-gpu/results
#
# Needs nvcc, CMake and a C++ compiler; nlohmann/json and CLI11 from the system or staged by
# cuda_validate/stage_headers.sh. Environment overrides (for a dry run without a GPU, e.g.
# SPMDSIM_VALIDATE_BACKEND=cpu SPMDSIM_VALIDATE_SHAPE=16,64,128):
#   SPMDSIM_VALIDATE_BACKEND  cuda (default) | cpu
#   SPMDSIM_VALIDATE_SHAPE    global [B,S,D] of the site (default 64,2048,2048: 2^28 elements)
#   SPMDSIM_VALIDATE_SHARDS   data-parallel ways (default 8)
#   SPMDSIM_GPU_BUILD_DIR     build directory (default build-gpu)
# Exit code: 0 when every verdict is ok, else the first failing run's code.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
build="${SPMDSIM_GPU_BUILD_DIR:-$repo/build-gpu}"
out="${OUT:-$build/results}"
backend="${SPMDSIM_VALIDATE_BACKEND:-cuda}"
shape="${SPMDSIM_VALIDATE_SHAPE:-64,2048,2048}"
shards="${SPMDSIM_VALIDATE_SHARDS:-8}"
mkdir -p "$out"
exec > >(tee "$out/run_on_gpu.log") 2>&1

export PATH="/usr/local/cuda/bin:$PATH"
# Load every kernel at start, so that no module load allocates device memory mid-measurement.
export CUDA_MODULE_LOADING=EAGER

start=$(date +%s)
echo "== run_on_gpu.sh $(date -u +%Y-%m-%dT%H:%M:%SZ), backend $backend"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null ||
  echo "(nvidia-smi not available)"
command -v nvcc >/dev/null && nvcc --version | tail -n 1

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cuda_flag=ON
[[ "$backend" == cpu ]] && cuda_flag=AUTO
echo "== build ($build)"
if ! cmake -S "$here/standalone" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DSPMDSIM_CUDA="$cuda_flag" -DSPMDSIM_CUDA_ARCHITECTURES=90 >"$out/cmake.log" 2>&1; then
  tail -n 30 "$out/cmake.log"
  echo "run_on_gpu.sh: configure failed (missing nlohmann/CLI11? run cuda_validate/stage_headers.sh here and carry cuda_validate/.deps)"
  exit 2
fi
target=spmdsim-validate-cuda
[[ "$cuda_flag" == AUTO ]] && target=spmdsim-validate
if ! cmake --build "$build" --target "$target" -j "$(nproc)" >"$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log"
  echo "run_on_gpu.sh: build failed"
  exit 2
fi
bin="$build/cuda_validate/$target"
echo "built $bin in $(( $(date +%s) - start ))s"

rc=0
run() {
  local name="$1"
  shift
  echo
  echo "== $name: $*"
  "$bin" --backend "$backend" --out "$out/verdict_$name.json" "$@"
  local code=$?
  if [[ $code -ne 0 && $rc -eq 0 ]]; then rc=$code; fi
}
# 1. Data parallel: the last device's shard of a batch-sharded activation.
run dp "--shape=$shape" --shards "$shards" --shard-index $((shards - 1)) --reps 10
# 2. Unsharded: the same site on one device, where the fused kernel has the most work.
run single "--shape=$shape" --shards 1 --reps 10
# 3. spmdsim's prediction format: the example sites (odd element count, what-if lowerings).
run example "$here/examples/dropout_sites.json" --reps 3

echo
echo "== summary ($(( $(date +%s) - start ))s): verdicts in $out"
for f in "$out"/verdict_*.json; do
  python3 - "$f" <<'PY' 2>/dev/null || grep -o '"ok": [a-z]*' "$f" | tail -n 1
import json, sys
v = json.load(open(sys.argv[1]))
print("%s: %s on %s" % (sys.argv[1].rsplit("/", 1)[-1], "ok" if v["ok"] else "FAILED", v["device"]))
for r in v["results"]:
    if "error" in r:
        print("  %-27s error: %s" % (r["lowering"], r["error"]))
        continue
    print("  %-27s predicted %12d measured %12d (%+.2f%%)  %8.3f ms  %7.1f GB/s  %8.1f Gops/s  bits %s"
          % (r["lowering"], r["predicted_bytes"], r["measured_bytes"], r["error_pct"], r["time_ms"],
             r["gbps"], r["gops"], "match" if r["bit_mismatches"] == 0 and r["mask_mismatches"] == 0
             and r["output_mismatches"] == 0 else "MISMATCH"))
    if r.get("pct_peak_bandwidth") is not None:
        print("  %-27s %.1f%% of peak memory bandwidth, %.1f%% of peak int32 throughput"
              % ("", r["pct_peak_bandwidth"], r["pct_peak_int32"]))
PY
done
exit $rc
