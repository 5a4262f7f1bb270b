#!/bin/bash
# Compiles the 12 geometries x 3 variants of README.md into dumps/ (g1: grad of a checkpointed
# dropout, one site and its remat copy; g2: two chained sites; p1: plain forward, one site).
# PY: a python with jax 0.12.0.1 and libtpu (tools/requirements/jax0.12.0.1.txt).
# Lines below: name ndev mesh axes shape spec
set -u
cd "$(dirname "$0")"
mkdir -p dumps logs
PY=${PY:-python3}
while read n nd mesh axes shape spec; do
  [ -z "$n" ] && continue
  for v in "g1:grad" "g2:grad sites=2 mode=chain" "p1:"; do
    tag=${v%%:*}; o=${v#*:}
    [ -d dumps/${n}_$tag ] || nice -n 10 "$PY" dropout.py ${n}_$tag $nd $mesh $axes $shape $spec $o > logs/${n}_$tag.log 2>&1 || echo "FAIL ${n}_$tag"
  done
done <<'CASES'
p8_r1 8 8 data 8,32,64 data,,
p8_r2 8 8 data 16,32,64 data,,
p8_r4 8 8 data 32,32,64 data,,
p16_r1 16 16 data 16,32,64 data,,
p16_r2 16 16 data 32,32,64 data,,
p16_r4 16 16 data 64,32,64 data,,
p32_r1 32 32 data 32,32,64 data,,
p32_r2 32 32 data 64,32,64 data,,
p16_m8x2 16 8x2 data,model 16,32,64 data,,
p16_m4x4 16 4x4 data,model 16,32,64 data,,
p16_r1_s16d128 16 16 data 16,16,128 data,,
p16_r1_s8d256 16 16 data 16,8,256 data,,
CASES
