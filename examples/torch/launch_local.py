#!/usr/bin/env python3
"""Starts the ranks of a training command on this machine, with the environment morphrun
would give them, for tests and experiments without Slurm.

    launch_local.py --dp 2 --tp 2 --pp 2 --zero 1 --global-batch 16 -- python3 train.py --steps 10

Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, a
free MASTER_PORT, MORPH_PLAN ("dp=D tp=T pp=P zero=Z offload=0 gc=G ga=A mb=M mbs=S",
D*A*M*S being the global batch), MORPH_DP, MORPH_TP, MORPH_PP, MORPH_ZERO, its
coordinates MORPH_DP_RANK, MORPH_TP_RANK, MORPH_PP_RANK (Megatron-LM order:
rank = pp_rank*(t*d) + dp_rank*t + tp_rank), MORPH_CHECKPOINT_SIGNAL (SIGUSR2 unless set)
and OMP_NUM_THREADS=1. When run from Morph's source tree it also points MORPH_RULES_DIR
at share/rules and PYTHONPATH at build/python, unless they are set.

--signal-after-step K sends the checkpoint signal to rank 0 once the loss log (the
command's --loss-log, or --watch) shows step K: the ranks agree on it after a step, save
and exit 0, as under morphrun.

The exit status is the first non-zero status of a rank (128+n for a rank killed by signal
n), else 0. When a rank fails the others get --grace seconds to end on their own (ranks
that refuse a run together all say so), then SIGTERM, then SIGKILL.
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import time
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_TREE = os.path.dirname(os.path.dirname(HERE))  # examples/torch -> the repository


def free_port() -> int:
    """A port nobody listens on, below the ephemeral range: a port from that range can be
    taken, before rank 0 listens on it, by the other ranks' own connection attempts."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    rng = random.Random(os.getpid() ^ time.time_ns())
    for _ in range(200):
        port = rng.randrange(20000, max(low, 20001))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise SystemExit("launch_local.py: no free port below the ephemeral range")


def parse_args(argv: Optional[List[str]] = None):
    ap = argparse.ArgumentParser(prog="launch_local.py", description=__doc__.split("\n\n")[0],
                                 usage="%(prog)s [options] -- command [arg...]")
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--pp", type=int, default=1)
    ap.add_argument("--zero", type=int, default=0, choices=(0, 1, 2, 3))
    ap.add_argument("--gc", type=int, default=0, choices=(0, 1), help="gradient checkpointing")
    ap.add_argument("--ga", type=int, default=1, help="gradient accumulation steps")
    ap.add_argument("--micro-batches", type=int, default=None,
                    help="micro-batches per pipeline flush (mb; default 1 without pipeline, else pp)")
    ap.add_argument("--global-batch", type=int, default=None,
                    help="samples per step; the micro-batch size is global-batch / (dp*ga*mb)")
    ap.add_argument("--mbs", type=int, default=None, help="micro-batch size (instead of --global-batch)")
    ap.add_argument("--plan", default=None, help="MORPH_PLAN verbatim (instead of the options above)")
    ap.add_argument("--signal-after-step", type=int, default=None, metavar="K",
                    help="send the checkpoint signal to rank 0 once the loss log shows step K")
    ap.add_argument("--watch", default=None, metavar="FILE",
                    help="the loss log to watch (default: the command's --loss-log)")
    ap.add_argument("--grace", type=float, default=10.0,
                    help="seconds the other ranks get to end after one failed (default 10)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.command and a.command[0] == "--":
        a.command = a.command[1:]
    if not a.command:
        ap.error("no command (launch_local.py [options] -- command [arg...])")
    if a.plan is None:
        if a.micro_batches is None:
            a.micro_batches = a.pp
        for name in ("dp", "tp", "pp", "ga", "micro_batches"):
            if getattr(a, name) < 1:
                ap.error(f"--{name.replace('_', '-')} must be at least 1")
        per_step = a.dp * a.ga * a.micro_batches
        if a.mbs is None:
            if a.global_batch is None:
                ap.error("--global-batch or --mbs is needed")
            if a.global_batch % per_step:
                ap.error(f"--global-batch {a.global_batch} is not a multiple of dp*ga*mb = {per_step}")
            a.mbs = a.global_batch // per_step
        elif a.global_batch is not None and a.global_batch != per_step * a.mbs:
            ap.error(f"--global-batch {a.global_batch} is not dp*ga*mb*mbs = {per_step * a.mbs}")
        a.plan = (f"dp={a.dp} tp={a.tp} pp={a.pp} zero={a.zero} offload=0 gc={a.gc} ga={a.ga} "
                  f"mb={a.micro_batches} mbs={a.mbs}")
    else:
        fields = dict(kv.split("=", 1) for kv in a.plan.replace(",", " ").split() if "=" in kv)
        try:
            a.dp, a.tp, a.pp = int(fields["dp"]), int(fields["tp"]), int(fields["pp"])
            a.zero = int(fields.get("zero", 0))
        except (KeyError, ValueError):
            ap.error(f"--plan {a.plan!r}: dp=, tp= and pp= are needed")
    if a.watch is None:
        for i, arg in enumerate(a.command):
            if arg == "--loss-log" and i + 1 < len(a.command):
                a.watch = a.command[i + 1]
            elif arg.startswith("--loss-log="):
                a.watch = arg.split("=", 1)[1]
    if a.signal_after_step is not None and not a.watch:
        ap.error("--signal-after-step needs a loss log to watch (the command's --loss-log, or --watch)")
    return a


def rank_env(a, rank: int, world: int, port: int) -> dict:
    env = dict(os.environ)
    t, d = a.tp, a.dp
    pp_rank, rest = divmod(rank, t * d)
    dp_rank, tp_rank = divmod(rest, t)
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world),
        "GROUP_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "MORPH_PLAN": a.plan, "MORPH_DP": str(a.dp), "MORPH_TP": str(a.tp), "MORPH_PP": str(a.pp),
        "MORPH_ZERO": str(a.zero), "MORPH_DP_RANK": str(dp_rank), "MORPH_TP_RANK": str(tp_rank),
        "MORPH_PP_RANK": str(pp_rank), "OMP_NUM_THREADS": "1",
    })
    env.setdefault("MORPH_CHECKPOINT_SIGNAL", "SIGUSR2")
    rules = os.path.join(SOURCE_TREE, "share", "rules")
    if not env.get("MORPH_RULES_DIR") and os.path.isfile(os.path.join(rules, "megatron.json")):
        env["MORPH_RULES_DIR"] = rules
    build = os.path.join(SOURCE_TREE, "build", "python")
    if not env.get("PYTHONPATH") and os.path.isdir(os.path.join(build, "morph")):
        env["PYTHONPATH"] = build
    return env


class LossLog:
    """Follows a loss log ("STEP LOSS" lines) from its size at start: the highest step seen."""

    def __init__(self, path: str):
        self.path = path
        self.offset = os.path.getsize(path) if os.path.exists(path) else 0
        self.tail = ""
        self.step = 0

    def poll(self) -> int:
        try:
            with open(self.path) as f:
                size = os.fstat(f.fileno()).st_size
                if size < self.offset:  # truncated: a fresh run rewrote it
                    self.offset, self.tail = 0, ""
                f.seek(self.offset)
                text = f.read()
        except FileNotFoundError:
            return self.step
        self.offset += len(text.encode())
        lines = (self.tail + text).split("\n")
        self.tail = lines.pop()
        for line in lines:
            fields = line.split()
            if fields and fields[0].isdigit():
                self.step = max(self.step, int(fields[0]))
        return self.step


def exit_status(code: int) -> int:
    return 128 - code if code < 0 else code


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    world = a.dp * a.tp * a.pp
    port = free_port()
    checkpoint_signal = os.environ.get("MORPH_CHECKPOINT_SIGNAL", "SIGUSR2").upper()
    if not checkpoint_signal.startswith("SIG"):
        checkpoint_signal = "SIG" + checkpoint_signal
    signum = signal.Signals[checkpoint_signal].value
    watch = LossLog(a.watch) if a.signal_after_step is not None else None
    procs = [subprocess.Popen(a.command, env=rank_env(a, r, world, port)) for r in range(world)]

    def forward(sig, frame):  # noqa: ARG001
        for p in procs:
            if p.poll() is None:
                p.send_signal(sig)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)

    first_failure, failed_at, terminated_at, signalled = 0, None, None, False
    while True:
        codes = [p.poll() for p in procs]
        for c in codes:
            if c is not None and c != 0 and not first_failure:
                first_failure, failed_at = exit_status(c), time.monotonic()
        if all(c is not None for c in codes):
            break
        if watch and not signalled and procs[0].poll() is None and watch.poll() >= a.signal_after_step:
            procs[0].send_signal(signum)
            signalled = True
            print(f"launch_local.py: step {watch.step} logged: {checkpoint_signal} sent to rank 0",
                  file=sys.stderr, flush=True)
        now = time.monotonic()
        if failed_at is not None and terminated_at is None and now - failed_at > a.grace:
            forward(signal.SIGTERM, None)
            terminated_at = now
        if terminated_at is not None and now - terminated_at > 5:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        time.sleep(0.05)
    return first_failure


if __name__ == "__main__":
    sys.exit(main())
