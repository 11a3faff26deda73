#!/usr/bin/env bash
# Device time per CUDA kernel of one inference through `opt bench`, under Nsight Compute, on the
# GPU machine:
#   bash tools/gpu/kernel_times.sh MODEL.onnx [ITERS] > kernels.txt
# ncu times every kernel launch (gpu__time_duration.sum; clocks not locked, so the figures are
# those of a normal run). Two runs of opt bench, with 1 and 1 + ITERS (default 5) eager
# inferences: the difference is ITERS steady inferences, without planning's launches (cuDNN's
# algorithm timing, the first run's setup). The table: microseconds per inference per kernel
# name, costliest first, with launches per inference. Eager (--no-cuda-graph): ncu does not see
# inside a replayed CUDA graph; the gaps between kernels are not counted.
set -euo pipefail
model=$1
iters=${2:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
opt=${OPT:-$root/build-gpu/bin/opt}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
one=$(mktemp)
many=$(mktemp)
trap 'rm -f "$one" "$many"' EXIT
for pair in "1 $one" "$((iters + 1)) $many"; do
  read -r n file <<<"$pair"
  "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv \
    "$opt" bench "$model" --device cuda --no-cuda-graph --warmup 0 --iters "$n" >"$file" 2>/dev/null
done
python3 - "$one" "$many" "$iters" <<'PY'
import collections, csv, sys

def totals(path):
    rows = [r for r in csv.reader(open(path)) if len(r) > 10]
    head = rows[0]
    name_i, value_i = head.index("Kernel Name"), head.index("Metric Value")
    unit_i = head.index("Metric Unit")
    us, count = collections.Counter(), collections.Counter()
    for r in rows[1:]:
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3,
                 "msecond": 1e3}[r[unit_i]]
        us[r[name_i]] += float(r[value_i].replace(",", "")) * scale
        count[r[name_i]] += 1
    return us, count

us1, n1 = totals(sys.argv[1])
usn, nn = totals(sys.argv[2])
iters = int(sys.argv[3])
us = {k: (usn[k] - us1.get(k, 0.0)) / iters for k in usn}
count = {k: (nn[k] - n1.get(k, 0)) / iters for k in nn}
print(f"# {sum(count.values()):.0f} kernel launches, {sum(us.values()):.1f} us of kernels per inference")
for name in sorted(us, key=us.get, reverse=True)[:40]:
    print(f"{us[name]:9.1f} us  {count[name]:6.1f}x  {name[:160]}")
PY
