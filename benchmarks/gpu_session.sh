#!/usr/bin/env bash
# One lent-GPU session's measurements in one bounded command (device machines are lent for minutes):
# llama.cpp built and measured (benchmarks/gpu_llama_cpp.py) in the background, while its CUDA build
# keeps the CPUs busy the GPU's kernels are timed (benchmarks/gpu_kernels.py). The probe runs first,
# alone, and the kernels after it; they took 24 s on an H200, long before the build ends (~280 s) and
# llama.cpp's own timings begin, so no two timings share the GPU.
#   OUT=dir bash benchmarks/gpu_session.sh [seconds for llama.cpp, default 520]
set -u
OUT=${OUT:?set OUT to the folder for results}
LLAMA_S=${1:-520}
LL=/tmp/llama-out
rm -rf "$LL" && mkdir -p "$LL" "$OUT/kernels"
export PYTHONUNBUFFERED=1
timeout "$LLAMA_S" python3 benchmarks/gpu_llama_cpp.py --src .device/llama-src.tar.xz --out "$LL" \
    --measure-budget-s 60 > "$LL/stdout.txt" 2>&1 &
LLAMA_PID=$!
for _ in $(seq 60); do   # the llama.cpp script's first step is the probe (torch on the GPU)
    grep -q "probe: rc" "$LL/run.log" 2>/dev/null && break
    sleep 1
done
timeout 300 python3 benchmarks/gpu_kernels.py --out "$OUT/kernels" || echo "gpu_kernels: rc $?"
wait "$LLAMA_PID"; echo "gpu_llama_cpp: rc $?"
tar czf "$OUT/llama.tgz" -C "$LL" .
cp "$LL/run.log" "$OUT/llama-run.log" 2>/dev/null
ls -la "$OUT" "$OUT/kernels"
