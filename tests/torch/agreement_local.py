#!/usr/bin/env python3
"""The PyTorch example's collectively() (examples/torch/train.py) on three gloo ranks: a
failure of any type on one rank, here a RuntimeError as CUDA's out-of-memory raises, is
raised as AgreedError on every rank, naming the rank; without it, the ranks that did not
fail wait in the gather until the process group times out. Run by continuity_local.sh.

    agreement_local.py TRAIN_PY    (exit 0 when every rank agrees; 1, saying what each saw)
"""
import datetime
import os
import sys
import tempfile

import torch.distributed as dist
import torch.multiprocessing as mp

WORLD, FAILING = 3, 1
TIMEOUT_S = 20  # the gather's wait without agreement; the test fails after it


def rank_main(rank: int, train_py: str, store: str, results) -> None:
    try:
        agree(rank, train_py, store, results)
    except BaseException as e:  # the parent waits for one line per rank
        results.put((rank, f"{type(e).__name__} outside collectively(): {e}"))


def agree(rank: int, train_py: str, store: str, results) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(train_py)))
    import train  # pylint: disable=import-outside-toplevel
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=TIMEOUT_S))

    def step():
        if rank == FAILING:
            raise RuntimeError("CUDA out of memory")
        return rank

    try:
        ok = train.collectively(lambda: rank * 10, rank) == rank * 10
        train.collectively(step, rank)
        results.put((rank, f"no error (first round {'right' if ok else 'wrong'})"))
    except train.AgreedError as e:
        results.put((rank, f"AgreedError: {e}" if ok else "the first round returned another value"))
    except Exception as e:  # pylint: disable=broad-except
        results.put((rank, f"{type(e).__name__}: {e}"))


def main() -> int:
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as work:
        store = os.path.join(work, "store")
        procs = [ctx.Process(target=rank_main, args=(r, sys.argv[1], store, results)) for r in range(WORLD)]
        for p in procs:
            p.start()
        seen = dict(results.get(timeout=TIMEOUT_S * 4) for _ in procs)
        for p in procs:
            p.join(timeout=TIMEOUT_S)
    expected = f"AgreedError: rank {FAILING}: RuntimeError: CUDA out of memory"
    wrong = {r: s for r, s in sorted(seen.items()) if s != expected}
    for r, s in wrong.items():
        print(f"collectively: rank {r} saw {s!r}, expected {expected!r}")
    if not wrong:
        print(f"collectively: {WORLD} ranks agree on rank {FAILING}'s RuntimeError")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
