"""peak.py [--autocast bf16] train.py ARGS: runs the trainer and prints the CUDA caching
allocator's peaks at its exit. --autocast bf16 runs it under torch.autocast(bfloat16)
(matrix products in bf16, parameters and Adam in the trainer's dtype): a measurement aid,
not a train.py mode."""
import contextlib
import runpy
import sys

import torch

args = sys.argv[1:]
autocast = contextlib.nullcontext()
if args[:2] == ["--autocast", "bf16"]:
    autocast, args = torch.autocast("cuda", dtype=torch.bfloat16), args[2:]
sys.argv = args
try:
    with autocast:
        runpy.run_path(args[0], run_name="__main__")
finally:
    if torch.cuda.is_initialized():
        gib = 2.0 ** 30
        print("peak: max_memory_allocated=%.2f GiB max_memory_reserved=%.2f GiB"
              % (torch.cuda.max_memory_allocated() / gib, torch.cuda.max_memory_reserved() / gib), flush=True)
