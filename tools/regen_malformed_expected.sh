#!/usr/bin/env bash
# Rewrites testdata/malformed/<input>.expected and testdata/hostile/<input>.expected from the
# built binary: "exit N" and the first line `spmdsim stats` (for hostile/: `spmdsim analyze`)
# writes to stderr for that input (run from the repository root, so paths are relative).
# analyzer/cli/cli_errors_test.cc checks the binary against these files; after changing a
# diagnostic, run this and review the diff like any golden output.
#   tools/regen_malformed_expected.sh                 # uses build/analyzer/spmdsim
#   SPMDSIM=build-x/analyzer/spmdsim tools/regen_malformed_expected.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
bin="${SPMDSIM:-build/analyzer/spmdsim}"
if [[ ! -x "$bin" ]]; then
  echo "regen_malformed_expected.sh: no binary at $bin (build first, or set SPMDSIM)" >&2
  exit 2
fi
count=0
# testdata/malformed: what `stats` says (the parser); testdata/hostile: what `analyze` says.
for input in testdata/malformed/* testdata/hostile/*; do
  name="$(basename "$input")"
  [[ "$name" == *.expected || "$name" == README.md ]] && continue
  command=stats
  [[ "$input" == testdata/hostile/* ]] && command=analyze
  set +e
  err="$("$bin" "$command" "$input" 2>&1 >/dev/null)"
  code=$?
  set -e
  if ((code > 3)); then
    echo "regen_malformed_expected.sh: $input: spmdsim exited $code (a crash?); nothing written" >&2
    exit 1
  fi
  printf 'exit %d\n%s\n' "$code" "$(head -n 1 <<<"$err")" >"$input.expected"
  count=$((count + 1))
done
echo "regen_malformed_expected.sh: wrote $count .expected files; review: git diff testdata/malformed testdata/hostile" >&2
