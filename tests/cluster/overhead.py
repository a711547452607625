#!/usr/bin/python3
"""overhead.py METRICS [LABEL]: one line per reconfiguration a job went through, from the
event lines morphrun's driver writes to its metrics file (morphrun(1), METRICS):

  reconfigure: path=<inplace|shrink|requeue> overhead_s=<x> checkpoint_s=<a> requeue_s=<b> reshard_s=<c> start_s=<d>

overhead_s runs from the checkpoint request (`checkpoint reason=...`) to the first iteration
after the next `start`. Its parts: checkpoint_s until the step saved and ended
(`checkpointed`); reshard_s from `reshard` to `start`; start_s from `start` to the first
iteration; requeue_s the rest (the requeue wait and the driver's restart on the requeue
path, giving nodes back on a shrink, next to nothing in place).

A reconfiguration that the next one interrupts before its first iteration (a job shrunk
seconds after it grew) has no end: it is printed apart, as `interrupted: path=<...>
before_s=<time up to the next checkpoint request>`, and the next one is measured from its
own request.
"""
import sys


def reconfigurations(lines):
    cur = None
    for line in lines:
        f = line.split()
        if not f:
            continue
        if f[0] == "#":
            t, what = float(f[1]), f[2]
            if what == "checkpoint" and cur is not None and "start" in cur:
                yield cur["path"], t - cur["t0"], None, None, None, None
                cur = {"t0": t, "path": "inplace"}
            elif what == "checkpoint" and cur is None:
                cur = {"t0": t, "path": "inplace"}
            elif cur is None:
                continue
            elif what == "checkpointed":
                cur.setdefault("saved", t)
            elif what == "requeue":
                cur.setdefault("saved", t)
            elif what == "driver":
                cur["path"] = "requeue"
            elif what == "shrink" and cur["path"] == "inplace":
                cur["path"] = "shrink"
            elif what == "reshard":
                cur.setdefault("reshard", t)
            elif what == "start":
                cur["start"] = t
            elif what == "finished":
                cur = None
        elif cur is not None and "start" in cur:
            t = float(f[0])
            total = t - cur["t0"]
            checkpoint = cur.get("saved", cur["t0"]) - cur["t0"]
            reshard = cur["start"] - cur["reshard"] if "reshard" in cur else 0.0
            start = t - cur["start"]
            yield cur["path"], total, checkpoint, total - checkpoint - reshard - start, reshard, start
            cur = None


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: overhead.py METRICS [LABEL]")
    label = f" job={sys.argv[2]}" if len(sys.argv) == 3 else ""
    with open(sys.argv[1]) as metrics:
        for path, total, checkpoint, requeue, reshard, start in reconfigurations(metrics):
            if checkpoint is None:
                print(f"interrupted: path={path} before_s={total:.1f}{label}")
                continue
            print(f"reconfigure: path={path} overhead_s={total:.1f} checkpoint_s={checkpoint:.1f} "
                  f"requeue_s={requeue:.1f} reshard_s={reshard:.1f} start_s={start:.1f}{label}")


if __name__ == "__main__":
    main()
