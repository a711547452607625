#!/usr/bin/env bash
# run.sh: the GPU checks of docs/gpu.md, on a machine with one or more GPUs, from the
# source tree with .gpu/ (pack.sh, then continuity.sh prepare) in it. Writes log.txt,
# topo.json, bandwidth.conf and continuity/ to $OUT (default /tmp/morph-gpu-check); the
# rest to a scratch folder. SECTIONS="profile train continuity" (the default: all) runs
# some of them, ROWS="h4096_tf32 ..." some of train's rows.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp/morph-gpu-check}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
start=$SECONDS
say() { printf '\n==> [%d s] %s\n' $((SECONDS - start)) "$*"; }
want() { [[ " ${SECTIONS:-profile train continuity} " == *" $1 "* ]]; }

say machine
nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max,clocks.max.sm --format=csv
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'

want profile && say "morph-profile topo and bandwidth" && (
  # shellcheck source=scripts/gpu-check/env.sh
  source "$top/scripts/gpu-check/env.sh"
  # The machine as a one-node cluster of its own GPU type (h200 here; GPU_TYPE=... otherwise).
  gpus=$(nvidia-smi -L | wc -l)
  cp "$top/etc/morph.conf" "$scratch/morph.conf"
  printf 'NodeType=gpu-check Gpu=%s Gpus=%d Cpus=%d MemoryGiB=%d NetworkBandwidthGBps=200 Nics=1\nNodeName=gpu-check NodeType=gpu-check\n' \
    "${GPU_TYPE:-h200}" "$gpus" "$(nproc)" $(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1048576)) >>"$scratch/morph.conf"
  export MORPH_CONF=$scratch/morph.conf SLURMD_NODENAME=gpu-check
  timeout 60 "$top/.gpu/bin/morph-profile" topo
  timeout 60 "$top/.gpu/bin/morph-profile" topo --json >"$out/topo.json"
  # One rank: pinned copies only (NCCL needs a GPU per rank; with several GPUs, start one
  # rank per GPU with an MPI launcher to measure NCCL inside the node).
  timeout 180 "$top/.gpu/bin/morph-profile" bandwidth --sizes 1K:1G --iters 20 --out "$out/bandwidth.conf"
  echo "bandwidth rc=$?"
  cat "$out/bandwidth.conf"
)

say "the morph Python package for this python3"
bash "$top/scripts/gpu-check/native.sh" "$scratch/python" && ls "$scratch"/python/morph/_native*
export PYTHONPATH=$scratch/python MORPH_RULES_DIR=$top/share/rules

if want continuity; then
  say "checkpoints between the CPU and the GPU (continuity.sh)"
  bash "$top/scripts/gpu-check/continuity.sh" gpu "$out/continuity"
  echo "continuity rc=$?"
fi
want train || { say finished; exit 0; }

# train NAME LIMIT HIDDEN BATCH [LAUNCH OPTIONS] [-- PEAK OPTIONS]: examples/torch/train.py on
# GPU 0, 8 layers, vocabulary 1024, float32 parameters; prints the median of steps 3 onwards.
train() {
  local name=$1 limit=$2 hidden=$3 batch=$4 launch=() peak=()
  [ -z "${ROWS:-}" ] || [[ " $ROWS " == *" $name "* ]] || return 0
  shift 4
  while [ $# -gt 0 ] && [ "$1" != -- ]; do launch+=("$1"); shift; done
  [ $# -gt 0 ] && shift && peak=("$@")
  say "train.py $name"
  (cd "$top/examples/torch" && MORPH_METRICS="$scratch/m_$name.txt" timeout "$limit" python3 launch_local.py --dp 1 \
    --global-batch "$batch" "${launch[@]}" -- python3 "$top/scripts/gpu-check/peak.py" "${peak[@]}" train.py \
    --device cuda --dtype float32 --layers 8 --vocab 1024 --hidden "$hidden" --steps 12 --quiet)
  echo "$name rc=$?"
  python3 - "$scratch/m_$name.txt" "$name" <<'PY'
import os, statistics, sys
path, name = sys.argv[1:]
t = [float(line.split()[1]) for line in open(path)] if os.path.exists(path) else []
if len(t) > 2:
    print("%s: steps=%d median_step_ms=%.1f min=%.1f max=%.1f" % (name, len(t), 1e3 * statistics.median(t[2:]), 1e3 * min(t[2:]), 1e3 * max(t[2:])))
PY
}
train h2048_fp32 120 2048 8192
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 train h2048_tf32 120 2048 8192
train h2048_bf16 120 2048 8192 -- --autocast bf16
train h4096_fp32 180 4096 16384
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 train h4096_tf32 120 4096 16384
train h4096_bf16 120 4096 16384 -- --autocast bf16
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 train h4096_tf32_gc 120 4096 16384 --gc 1
# The same global batch in 4 micro-batches, and a quarter of it in one.
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 train h4096_tf32_ga4 120 4096 16384 --ga 4
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 train h4096_tf32_b4096 120 4096 4096
# The caching allocator's reserve without and with expandable segments (PyTorch 2.1 and later).
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 train h2048_tf32_expandable 120 2048 8192
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 train h4096_tf32_expandable 120 4096 16384
unset PYTORCH_CUDA_ALLOC_CONF

say "two ranks on one GPU"
(cd "$top/examples/torch" && timeout 60 python3 launch_local.py --tp 2 --global-batch 64 --grace 5 -- \
  python3 train.py --device cuda --dtype float32 --steps 3 --quiet 2>&1 | grep -m1 -o 'Duplicate GPU detected.*' || echo "no NCCL refusal seen")
say finished
