#!/bin/bash
# The sweep of README.md: one checkpointed dropout under jax.grad per geometry, replicated
# threefry; prints the row-major pred copies and the masks in each buffer assignment.
# PY: a python with jax 0.12.0.1 and libtpu 0.0.50.1 (see ../tpu_reshard/README.md).
set -u
cd "$(dirname "$0")"
PY=${PY:-python3}
export DUMPS=${DUMPS:-$PWD/dumps}
for c in d4:4:4:data:16,32,64 d4:4:4:data:32,32,64 d4:4:4:data:64,32,64 d4:4:4:data:16,64,64 \
         d4:4:4:data:16,32,128 d4:4:4:data:16,16,64 d4:4:4:data:16,32,256 d4:4:4:data:16,128,64 \
         m22:4:2x2:data,model:16,32,64 m22:4:2x2:data,model:8,32,64 \
         m22:4:2x2:data,model:16,64,64 m22:4:2x2:data,model:32,32,64 \
         m22:4:2x2:data,model:16,16,64 m22:4:2x2:data,model:16,16,128 \
         d8:8:8:data:32,32,64 d8:8:8:data:64,32,64 d8:8:8:data:32,64,64; do
  IFS=: read -r tag nd mesh axes shape <<< "$c"
  n=s_${tag}_${shape//,/x}
  nice "$PY" ../tpu_reshard/dropout.py "$n" "$nd" "$mesh" "$axes" "$shape" data,, grad dotin > /dev/null 2>&1 || echo "fail $n"
  f=$(ls "$DUMPS/$n"/*buffer-assignment.txt | head -1)
  echo "$n $(grep -cE ': pred\[[0-9,]+\]\{3,2,1,0' "$f") copies; masks: $(grep -oE 'value: <[0-9]+ \S+ @[0-9]+> \(size=[0-9]+,offset=[0-9]+\): pred\[[0-9,]{3,}\]\{[^}]*\}' "$f" | sed -E 's/.*: //' | sort | uniq -c | tr '\n' ' ')"
done
