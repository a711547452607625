#!/usr/bin/env python3
"""A PyTorch training program that runs under Morph (morphrun --framework torch).

The model is Morph's reference trainer's (tests/trainer, C++) written with torch.nn and
torch.distributed: one token per sample, a vocabulary-parallel embedding, L residual MLP
blocks (RMS norm, column-parallel h->4h, tanh GELU, row-parallel 4h->h) and a final RMS
norm with a vocabulary-parallel output layer and cross-entropy. It trains with

- tensor parallelism (Megatron-LM style: autograd functions that all-reduce over the
  tensor-parallel group in the forward or the backward pass),
- pipeline parallelism (GPipe or 1F1B; activations and their gradients sent between
  neighbouring stages),
- data parallelism with ZeRO 0-3 (optimizer states partitioned over the DP group),
- gradient accumulation and gradient checkpointing,

all taken from the job's plan (``morph.plan()``, which reads what morphrun exports). Its
checkpoints are Morph's sharded format (``morph.checkpoint``): morphrun and
``morph reshard`` move them to another layout when Morph changes the plan, and the C++
reference trainer reads them too. On CPU in float64 the mathematics is the reference
trainer's, so a run can be stopped under one layout and continued under another, by
either program, with the same losses up to the order of floating-point sums.

Start it with morphrun (see README.md), or locally with launch_local.py:

    python3 launch_local.py --dp 2 --tp 2 --pp 2 --zero 1 --global-batch 16 -- \\
        python3 train.py --steps 10 --loss-log loss.txt

Exit status: 0 when --steps are done or after a checkpoint asked for by --save-at or the
checkpoint signal; 1 on an error (one "train.py: ..." line on stderr).
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
import zlib
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

import morph

PROGRAM = "morph-torch-example"
DATA_RULE = "sample i: token (i * 7919 + seed) mod vocab, target (token * 31 + 17) mod vocab"
NORM_EPS = 1e-5
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
FORWARD_TAG, BACKWARD_TAG = 0, 1


class TrainError(Exception):
    """A refusal of this program (bad options, a checkpoint that does not fit the run)."""


class AgreedError(Exception):
    """An error every rank raises together (see collectively()); rank 0 reports it."""


# ---- options ----------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 1, as any other refusal
        raise TrainError(message)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    ap = _Parser(
        prog="train.py",
        description="A tensor/pipeline/data-parallel MLP language model with ZeRO, trained under the "
                    "job's Morph plan (MORPH_PLAN) and checkpointed in Morph's sharded format.")
    ap.add_argument("--layers", type=int, default=4, help="residual MLP blocks (default 4)")
    ap.add_argument("--hidden", type=int, default=16, help="hidden size h; the MLP is 4h wide (default 16)")
    ap.add_argument("--vocab", type=int, default=50, help="vocabulary size V (default 50)")
    ap.add_argument("--vocab-multiple", type=int, default=4,
                    help="pad the vocabulary to a multiple of this times tp (default 4)")
    ap.add_argument("--samples", type=int, default=100000, help="dataset size (default 100000)")
    ap.add_argument("--seed", type=int, default=1, help="initialisation and data-order seed (default 1)")
    ap.add_argument("--global-batch", type=int, default=None,
                    help="samples per optimizer step; must be the plan's (the default)")
    ap.add_argument("--steps", type=int, default=10, help="train until this many steps are done (default 10)")
    ap.add_argument("--lr", type=float, default=1e-2, help="Adam learning rate (default 0.01)")
    ap.add_argument("--loss-log", default="", help='rank 0 writes one "STEP LOSS" line per step')
    ap.add_argument("--save-at", type=int, default=None, help="save after step K and exit 0")
    ap.add_argument("--save-every", type=int, default=0, help="also save after every N steps and go on")
    ap.add_argument("--checkpoint-dir", default=os.environ.get("MORPH_CHECKPOINT_DIR", ""),
                    help="checkpoints go to DIR/step_<N> (default: $MORPH_CHECKPOINT_DIR)")
    ap.add_argument("--resume", default=os.environ.get("MORPH_CHECKPOINT", ""),
                    help="continue from this checkpoint (default: $MORPH_CHECKPOINT)")
    ap.add_argument("--schedule", choices=("gpipe", "1f1b"), default="gpipe",
                    help="pipeline schedule (default gpipe); both give the same numbers")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cpu (gloo) or cuda (nccl, the rank's GPU)")
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                    help="parameter and optimizer dtype (default float64, the reference trainer's)")
    ap.add_argument("--min-step-seconds", type=float, default=0.0,
                    help="make every step last at least this long (to act in the middle of a short run)")
    ap.add_argument("--emulate-speed", type=float, default=0.0, metavar="F",
                    help="make every step last F times the iteration time Morph predicted for the plan "
                         "(the job record's iter_ms): an emulated cluster runs at the speed of the GPUs it emulates")
    ap.add_argument("--quiet", action="store_true", help="no per-step output")
    a = ap.parse_args(argv)
    for name in ("layers", "hidden", "vocab", "vocab_multiple", "samples", "steps"):
        if getattr(a, name) < 1:
            raise TrainError(f"--{name.replace('_', '-')} must be at least 1")
    if a.vocab < 2:
        raise TrainError("--vocab must be at least 2")
    if not (0 <= a.lr <= 10):
        raise TrainError("--lr must be within [0, 10]")
    if not (0 <= a.seed < 2**63):  # torch.manual_seed and the data order's seed
        raise TrainError("--seed must be within [0, 2^63)")
    if a.save_at is not None and a.save_at < 1:
        raise TrainError("--save-at must be at least 1")
    if a.save_at is not None and a.save_at > a.steps:
        raise TrainError(f"--save-at {a.save_at} is after --steps {a.steps}")
    if a.save_every < 0:
        raise TrainError("--save-every must not be negative")
    if (a.save_at is not None or a.save_every) and not a.checkpoint_dir:
        raise TrainError("--save-at and --save-every need --checkpoint-dir (or MORPH_CHECKPOINT_DIR)")
    if not (0 <= a.min_step_seconds <= 3600) or not (0 <= a.emulate_speed <= 1000):
        raise TrainError("--min-step-seconds must be within [0, 3600] and --emulate-speed within [0, 1000]")
    if a.device == "cuda" and not torch.cuda.is_available():
        raise TrainError("--device cuda: PyTorch sees no GPU")
    return a


# ---- process groups ---------------------------------------------------------------------

class Parallel:
    """This rank's process groups under the plan (Megatron-LM rank order, TP innermost)."""

    def __init__(self, p: morph.Plan):
        self.plan = p
        self.rank, self.world = p.rank, p.world_size
        self.dp, self.tp, self.pp = p.dp, p.tp, p.pp
        self.dp_rank, self.tp_rank, self.pp_rank = p.dp_rank, p.tp_rank, p.pp_rank
        self.first_stage = p.pp_rank == 0
        self.last_stage = p.pp_rank == p.pp - 1
        self.prev_stage = p.rank_of(p.dp_rank, p.tp_rank, p.pp_rank - 1) if not self.first_stage else None
        self.next_stage = p.rank_of(p.dp_rank, p.tp_rank, p.pp_rank + 1) if not self.last_stage else None
        # Every rank creates every group, in the order the plan lists them.
        groups = {}
        for kind in ("tp", "dp"):
            for ranks in p.groups(kind):
                g = dist.new_group(ranks)
                if p.rank in ranks:
                    groups[kind] = g
        # A group of one needs no communication: None stands for "skip".
        self.tp_group = groups["tp"] if self.tp > 1 else None
        self.dp_group = groups["dp"] if self.dp > 1 else None


# ---- tensor parallelism (Megatron-LM's mappings) -----------------------------------------

class _CopyToTP(torch.autograd.Function):
    """Input of a column-parallel layer: identity forward, all-reduce of the gradient."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class _ReduceFromTP(torch.autograd.Function):
    """Output of a row-parallel layer: all-reduce of partial sums, identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.contiguous().clone()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def copy_to_tp(x, group):
    return x if group is None else _CopyToTP.apply(x, group)


def reduce_from_tp(x, group):
    return x if group is None else _ReduceFromTP.apply(x, group)


class _VocabParallelCrossEntropy(torch.autograd.Function):
    """Per-sample cross-entropy over logits split by vocabulary rows across the TP group.
    Columns at or past `valid` are vocabulary padding: masked out (-inf logit, no gradient)."""

    @staticmethod
    def forward(ctx, logits, targets, first_row, valid, group):
        n, cols = logits.shape
        real = logits[:, :valid]
        if valid > 0:
            top = real.max(dim=1).values.contiguous()
        else:
            top = torch.full((n,), -math.inf, dtype=logits.dtype, device=logits.device)
        if group is not None:
            dist.all_reduce(top, op=dist.ReduceOp.MAX, group=group)
        e = torch.zeros_like(logits)
        e[:, :valid] = torch.exp(real - top[:, None])
        col = targets - first_row
        local = (col >= 0) & (col < valid)
        col = col.clamp(0, cols - 1)
        target_logit = torch.where(local, logits.gather(1, col[:, None]).squeeze(1), torch.zeros_like(top))
        sums = torch.stack([e.sum(dim=1), target_logit], dim=1)  # sum of exp, target logit
        if group is not None:
            dist.all_reduce(sums, group=group)
        ctx.save_for_backward(e, sums[:, 0].clone(), local, col)
        return torch.log(sums[:, 0]) + top - sums[:, 1]

    @staticmethod
    def backward(ctx, grad):
        e, sum_exp, local, col = ctx.saved_tensors
        d = e * (grad / sum_exp)[:, None]
        rows = torch.nonzero(local).squeeze(1)
        d[rows, col[rows]] -= grad[rows]
        return d, None, None, None, None


# ---- the model --------------------------------------------------------------------------

class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps), times a learned weight (replicated over TP)."""

    def __init__(self, hidden: int, factory: dict):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden, **factory))

    def forward(self, x):
        rinv = torch.rsqrt(x.square().sum(dim=-1, keepdim=True) / x.shape[-1] + NORM_EPS)
        return (x * rinv) * self.weight


class VocabParallelEmbedding(nn.Module):
    """Rows [first_row, first_row + rows) of the padded vocabulary; other tokens give 0,
    and the TP all-reduce completes every row."""

    def __init__(self, rows: int, hidden: int, first_row: int, group, factory: dict):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(rows, hidden, **factory))
        self.first_row, self.rows, self.group = first_row, rows, group

    def forward(self, tokens):
        local = tokens - self.first_row
        outside = (local < 0) | (local >= self.rows)
        x = F.embedding(local.clamp(0, self.rows - 1), self.weight).masked_fill(outside[:, None], 0.0)
        return reduce_from_tp(x, self.group)


class ColumnParallelLinear(nn.Module):
    """y = x W^T + b with W's rows (output features) split over TP; the output stays split."""

    def __init__(self, in_features: int, out_local: int, bias: bool, group, factory: dict):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_local, in_features, **factory))
        self.bias = nn.Parameter(torch.empty(out_local, **factory)) if bias else None
        self.group = group

    def forward(self, x):
        return F.linear(copy_to_tp(x, self.group), self.weight, self.bias)


class RowParallelLinear(nn.Module):
    """y = x W^T + b with W's columns (input features) split over TP: the partial products
    are all-reduced, then the replicated bias is added once."""

    def __init__(self, in_local: int, out_features: int, group, factory: dict):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_local, **factory))
        self.bias = nn.Parameter(torch.empty(out_features, **factory))
        self.group = group

    def forward(self, x):
        return reduce_from_tp(F.linear(x, self.weight), self.group) + self.bias


class ParallelMLP(nn.Module):
    def __init__(self, hidden: int, tp: int, group, factory: dict):
        super().__init__()
        self.dense_h_to_4h = ColumnParallelLinear(hidden, 4 * hidden // tp, True, group, factory)
        self.dense_4h_to_h = RowParallelLinear(4 * hidden // tp, hidden, group, factory)

    def forward(self, x):
        return self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(x), approximate="tanh"))


class ResidualMLPBlock(nn.Module):
    """x + MLP(norm(x)): a transformer layer without attention, named as Megatron-LM's."""

    def __init__(self, hidden: int, tp: int, group, factory: dict):
        super().__init__()
        self.post_attention_layernorm = RMSNorm(hidden, factory)
        self.mlp = ParallelMLP(hidden, tp, group, factory)

    def forward(self, x):
        return x + self.mlp(self.post_attention_layernorm(x))


class Embedding(nn.Module):
    def __init__(self, rows: int, hidden: int, first_row: int, group, factory: dict):
        super().__init__()
        self.word_embeddings = VocabParallelEmbedding(rows, hidden, first_row, group, factory)

    def forward(self, tokens):
        return self.word_embeddings(tokens)


@dataclass
class ModelConfig:
    vocab: int
    hidden: int
    layers: int
    vocab_multiple: int


class PipelineStage(nn.Module):
    """The layers [first_layer, end_layer) of one pipeline stage on one TP rank; the first
    stage also embeds, the last one also normalises, projects onto the vocabulary and
    computes the loss. Parameter names are the global model's (layers.<global index>)."""

    def __init__(self, cfg: ModelConfig, first_layer: int, end_layer: int, par: Parallel, padded_vocab: int,
                 gradient_checkpointing: bool, factory: dict):
        super().__init__()
        t, g = par.tp, par.tp_group
        self.cfg, self.first, self.last = cfg, par.first_stage, par.last_stage
        self.gc = gradient_checkpointing
        self.tp_group = g
        rows = padded_vocab // t
        self.vocab_first_row = rows * par.tp_rank
        self.vocab_valid = min(max(cfg.vocab - self.vocab_first_row, 0), rows)  # real (unpadded) local rows
        if self.first:
            self.embedding = Embedding(rows, cfg.hidden, self.vocab_first_row, g, factory)
        self.layers = nn.ModuleDict(
            {str(l): ResidualMLPBlock(cfg.hidden, t, g, factory) for l in range(first_layer, end_layer)})
        if self.last:
            self.final_layernorm = RMSNorm(cfg.hidden, factory)
            self.output_layer = ColumnParallelLinear(cfg.hidden, rows, False, g, factory)

    def forward(self, inputs):
        """Token ids on the first stage, the previous stage's activations otherwise."""
        x = self.embedding(inputs) if self.first else inputs
        for layer in self.layers.values():
            if self.gc and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=True)
            else:
                x = layer(x)
        return x

    def loss(self, hidden, targets):
        """Per-sample cross-entropy (last stage)."""
        logits = self.output_layer(self.final_layernorm(hidden))
        return _VocabParallelCrossEntropy.apply(logits, targets, self.vocab_first_row, self.vocab_valid,
                                                self.tp_group)


# ---- initialisation ---------------------------------------------------------------------

def init_scale(name: str, shape: List[int]) -> Tuple[float, float]:
    """(offset, scale) of parameter `name`: value = offset + scale * u, u in [-1, 1)."""
    if name.endswith("norm.weight"):
        return 1.0, 0.1
    if name.endswith(".bias"):
        return 0.0, 0.02
    if name.endswith("dense_h_to_4h.weight"):
        return 0.0, math.sqrt(3.0 / shape[1])
    if name.endswith("dense_4h_to_h.weight"):
        return 0.0, 0.5 * math.sqrt(3.0 / shape[1])
    return 0.0, 0.5  # embeddings, output layer


def local_shard(full: torch.Tensor, split: str, tp_rank: int, tp: int, padded_rows: int) -> torch.Tensor:
    """This TP rank's part of a global tensor, as the state spec splits it."""
    if split == "replicated":
        return full
    if split == "vocab":
        padded = torch.zeros((padded_rows,) + tuple(full.shape[1:]), dtype=full.dtype)
        padded[: full.shape[0]] = full  # padding rows stay 0
        full = padded
    if split in ("vocab", "column"):
        return full.chunk(tp, dim=0)[tp_rank]
    if split == "row":
        return full.chunk(tp, dim=1)[tp_rank]
    raise TrainError(f"unknown split {split!r}")


@torch.no_grad()
def initialise(model: nn.Module, spec_params: Dict[str, dict], seed: int, par: Parallel, padded_vocab: int):
    """Each global tensor from a generator seeded by (seed, its name), then this rank's
    shard: the same values under every layout. (Generating the whole tensor on every rank
    is fine for a small model; a large one would generate only its shard.)"""
    for name, p in model.named_parameters():
        meta = spec_params[name]
        g = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode())) % (1 << 63))
        u = torch.rand(meta["shape"], generator=g, dtype=torch.float64) * 2.0 - 1.0
        offset, scale = init_scale(name, meta["shape"])
        full = offset + scale * u
        p.copy_(local_shard(full, meta["split"], par.tp_rank, par.tp, padded_vocab))


# ---- flat buffers and the optimizer -----------------------------------------------------

@dataclass
class Slot:
    name: str
    offset: int
    shape: Tuple[int, ...]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


class FlatState:
    """The stage's parameters, their gradients and Adam's states in flat buffers, in the
    state spec's order (each local shard row-major, vocabulary padding rows included): the
    flattening Morph's ZeRO partitions. Parameters and gradients are views into the
    buffers, so the optimizer, the collectives and the checkpoint work on whole buffers.

    With ZeRO 0 every rank keeps Adam's states for all its F elements. With ZeRO 1-3 the
    buffers are padded to c * d (c = ceil(F / d)) and DP rank r keeps the states of the
    chunk [r c, (r+1) c) and updates only it; ZeRO 3 here keeps the full parameters at run
    time and differs only in its checkpoint (params.flat, its chunk of the parameters)."""

    def __init__(self, model: nn.Module, par: Parallel, zero: int, dtype, device):
        self.par, self.zero = par, zero
        self.slots: List[Slot] = []
        offset = 0
        params = list(model.named_parameters())
        for name, p in params:
            self.slots.append(Slot(name, offset, tuple(p.shape)))
            offset += p.numel()
        self.size = offset  # F
        d = par.dp
        self.chunk = -(-self.size // d) if zero > 0 else self.size
        self.chunk_begin = self.chunk * par.dp_rank if zero > 0 else 0
        padded = self.chunk * d if zero > 0 else self.size
        factory = dict(dtype=dtype, device=device)
        self.params = torch.zeros(padded, **factory)
        self.grads = torch.zeros(padded, **factory)
        self.exp_avg = torch.zeros(self.chunk, **factory)
        self.exp_avg_sq = torch.zeros(self.chunk, **factory)
        for (name, p), s in zip(params, self.slots):
            p.data = self.view(self.params, s)  # the parameter now lives in the flat buffer
            p.grad = self.view(self.grads, s)   # autograd accumulates into it in place
        self._params = [p for _, p in params]

    @staticmethod
    def view(buf: torch.Tensor, s: Slot) -> torch.Tensor:
        return buf[s.offset: s.offset + s.numel].view(s.shape)

    def zero_grad(self):
        self.grads.zero_()
        for p, s in zip(self._params, self.slots):
            # Autograd adds into an existing .grad in place; should anything have replaced
            # it, point it back at the buffer.
            if p.grad is None or p.grad.data_ptr() != self.grads.data_ptr() + s.offset * self.grads.element_size():
                p.grad = self.view(self.grads, s)

    def collect_grads(self):
        """Copies a gradient autograd stored elsewhere (not expected) into the buffer."""
        for p, s in zip(self._params, self.slots):
            if p.grad is not None and p.grad.data_ptr() != self.grads.data_ptr() + s.offset * self.grads.element_size():
                self.view(self.grads, s).copy_(p.grad)
                p.grad = self.view(self.grads, s)

    def local_chunk(self, buf: torch.Tensor) -> torch.Tensor:
        return buf[self.chunk_begin: self.chunk_begin + self.chunk]

    def gather_params(self):
        """ZeRO 1-3: every DP rank's updated chunk to every DP rank."""
        if self.zero > 0 and self.par.dp_group is not None:
            mine = self.local_chunk(self.params).clone()
            dist.all_gather(list(self.params.split(self.chunk)), mine, group=self.par.dp_group)


class Adam:
    """Adam without weight decay, as the reference trainer's (step count t from 1):
    m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  p -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps).
    Gradients are summed over the DP group first (gloo has no reduce-scatter: all-reduce,
    then each DP rank takes its chunk)."""

    def __init__(self, state: FlatState, lr: float, betas=ADAM_BETAS, eps=ADAM_EPS):
        self.s, self.lr, self.beta1, self.beta2, self.eps = state, lr, betas[0], betas[1], eps

    @torch.no_grad()
    def step(self, t: int):
        s = self.s
        s.collect_grads()
        if s.par.dp_group is not None:
            dist.all_reduce(s.grads, group=s.par.dp_group)
        g, p = s.local_chunk(s.grads), s.local_chunk(s.params)
        m, v = s.exp_avg, s.exp_avg_sq
        b1, b2 = self.beta1, self.beta2
        m.mul_(b1).add_(g * (1.0 - b1))
        v.mul_(b2).add_(g * (1.0 - b2) * g)
        c1, c2 = 1.0 - b1 ** t, 1.0 - b2 ** t
        p.sub_((m / c1 * self.lr) / ((v / c2).sqrt_() + self.eps))
        s.gather_params()


# ---- data -------------------------------------------------------------------------------

def sample_token(i: int, seed: int, vocab: int) -> int:
    return ((i % vocab) * 7919 + seed % vocab) % vocab


def target_of(token: int, vocab: int) -> int:
    return (token * 31 + 17) % vocab


def micro_batches(block: List[int], count: int, seed: int, vocab: int, device) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    """`block` (this DP rank's samples of the step) as `count` contiguous micro-batches whose
    sizes differ by one at most; empty ones are left out (every stage and TP rank of the
    pipeline leaves out the same)."""
    out, at, n = [], 0, len(block)
    for i in range(count):
        size = n // count + (1 if i < n % count else 0)
        tokens = [sample_token(j, seed, vocab) for j in block[at: at + size]]
        at += size
        if tokens:
            out.append((torch.tensor(tokens, dtype=torch.long, device=device),
                        torch.tensor([target_of(t, vocab) for t in tokens], dtype=torch.long, device=device)))
    return out


# ---- collective error handling ----------------------------------------------------------

def collectively(fn, world_rank: int):
    """Runs fn() on every rank; when it fails on any, every rank raises AgreedError with
    the first failure's message, so that none waits for the others in a collective."""
    result, error = None, None
    try:
        result = fn()
    except Exception as e:  # any failure, or the others wait for this rank in the gather
        expected = isinstance(e, (morph.MorphError, TrainError, OSError, ValueError))
        what = str(e) if expected else f"{type(e).__name__}: {e}"  # e.g. CUDA out of memory
        error = what if world_rank == 0 else f"rank {world_rank}: {what}"
    errors = [None] * dist.get_world_size()
    dist.all_gather_object(errors, error)
    for e in errors:
        if e:
            raise AgreedError(e)
    return result


# ---- the trainer ------------------------------------------------------------------------

class Trainer:
    """One rank of the training job. Construction and start() do everything that can
    refuse the run (each phase agreed on by all ranks); run() trains."""

    def __init__(self, args: argparse.Namespace, device: torch.device):
        self.a, self.device = args, device
        self.dtype = torch.float64 if args.dtype == "float64" else torch.float32
        rank = dist.get_rank()
        # MORPH_PLAN and this rank, checked against WORLD_SIZE and RANK (morph.MorphError).
        self.plan = plan = collectively(morph.plan, rank)
        collectively(self.configure, rank)
        self.par = Parallel(plan)  # creates the process groups: collective
        collectively(self.build, rank)

    def configure(self):
        a, plan = self.a, self.plan
        if plan.world_size != dist.get_world_size():
            raise TrainError(f"WORLD_SIZE {plan.world_size} but torch.distributed has {dist.get_world_size()} ranks")
        self.batch = a.global_batch if a.global_batch is not None else plan.global_batch
        if self.batch != plan.global_batch:
            raise TrainError(f"--global-batch {self.batch} is not the plan's global batch {plan.global_batch} "
                             f"(MORPH_PLAN {plan.text})")
        self.layout = plan.layout
        self.cfg = ModelConfig(a.vocab, a.hidden, a.layers, a.vocab_multiple)
        self.spec = morph.checkpoint.Spec.from_rules(
            "megatron", self.global_tensors(), layers=a.layers, optimizer=("exp_avg", "exp_avg_sq"),
            dtype="f64" if self.dtype == torch.float64 else "f32", vocab_multiple=a.vocab_multiple)
        self.spec.check_layout(self.layout)
        if (4 * a.hidden) % plan.tp:
            raise TrainError(f"tp={plan.tp} does not divide the MLP width 4h = {4 * a.hidden}")
        self.micro_count = plan.ga * plan.micro_batches  # micro-batches per DP rank and step
        if a.emulate_speed and plan.predicted_iteration_s <= 0:
            raise TrainError("--emulate-speed needs the job's record (MORPH_RECORD, with iter_ms): run under morphrun "
                             "in a Morph job")
        self.least_step_s = max(a.min_step_seconds, a.emulate_speed * plan.predicted_iteration_s)
        self.signal = None
        if a.checkpoint_dir:  # with nowhere to save, the signal keeps its default action
            self.signal = morph.signals.install()

    def build(self):
        a, plan = self.a, self.plan
        self.root = plan.rank == 0
        first, end = self.spec.layer_range(self.layout, plan.pp_rank)
        self.padded_vocab = self.spec.padded_rows(a.vocab, plan.tp)
        factory = dict(dtype=self.dtype, device=self.device)
        self.model = PipelineStage(self.cfg, first, end, self.par, self.padded_vocab, bool(plan.gc), factory)
        names = [n for n, _ in self.model.named_parameters()]
        if names != self.spec.stage_params(self.layout, plan.pp_rank):
            raise TrainError("the model's parameters are not the state spec's (names or order)")
        self.state = FlatState(self.model, self.par, plan.zero, self.dtype, self.device)
        self.check_shards()
        self.adam = Adam(self.state, a.lr)
        self.step_done, self.samples_done = 0, 0
        self.loss_log = None
        self.pending_sends = []

    def global_tensors(self):
        """The model's parameters, global names and shapes, in the spec's (flattening) order."""
        v, h = self.a.vocab, self.a.hidden
        out = [("embedding.word_embeddings.weight", [v, h])]
        for l in range(self.a.layers):
            p = f"layers.{l}."
            out += [(p + "post_attention_layernorm.weight", [h]),
                    (p + "mlp.dense_h_to_4h.weight", [4 * h, h]),
                    (p + "mlp.dense_h_to_4h.bias", [4 * h]),
                    (p + "mlp.dense_4h_to_h.weight", [h, 4 * h]),
                    (p + "mlp.dense_4h_to_h.bias", [h])]
        return out + [("final_layernorm.weight", [h]), ("output_layer.weight", [v, h])]

    def check_shards(self):
        """The local shapes are those of the checkpoint format (ZeRO 0 lists every shard)."""
        plain = self.layout.rsplit("zero=", 1)[0] + "zero=0"
        expected = self.spec.local_tensors(plain, self.plan.rank)
        for s, t in zip(self.state.slots, expected):
            if s.name != t.name or s.shape != tuple(t.shape):
                raise TrainError(f"shard of {s.name} is {list(s.shape)}, the checkpoint format has "
                                 f"{t.name} {list(t.shape)}")

    # -- checkpoints --

    def checkpoint_tensors(self) -> Dict[str, torch.Tensor]:
        """The buffers of this rank's file tensors (spec.local_tensors order): views into
        the flat buffers, so save and load copy nothing."""
        s = self.state
        views = {}
        for slot in s.slots:
            views[slot.name] = s.view(s.params, slot)
            views["optim.exp_avg." + slot.name] = s.view(s.exp_avg, slot) if s.zero == 0 else None
            views["optim.exp_avg_sq." + slot.name] = s.view(s.exp_avg_sq, slot) if s.zero == 0 else None
        views["optim.exp_avg"] = s.exp_avg
        views["optim.exp_avg_sq"] = s.exp_avg_sq
        views["params.flat"] = s.local_chunk(s.params)
        out = {}
        for t in self.spec.local_tensors(self.layout, self.plan.rank):
            v = views.get(t.name)
            if v is None or tuple(v.shape) != tuple(t.shape):
                raise TrainError(f"checkpoint tensor {t.name} {list(t.shape)} has no counterpart in the trainer")
            out[t.name] = v
        return out

    def trainer_info(self) -> dict:
        info = {"program": PROGRAM, "seed": self.a.seed, "samples": self.a.samples, "global_batch": self.batch,
                "micro_batches": self.micro_count, "vocab": self.a.vocab, "hidden": self.a.hidden,
                "layers": self.a.layers, "vocab_multiple": self.a.vocab_multiple,
                "adam": {"lr": self.adam.lr, "beta1": self.adam.beta1, "beta2": self.adam.beta2,
                         "eps": self.adam.eps},
                "data": DATA_RULE}
        if os.environ.get("MORPH_MODEL"):
            info["morph_model"] = os.environ["MORPH_MODEL"]  # morphrun refuses another model's checkpoint
        return info

    def save(self, why: str):
        path = os.path.join(self.a.checkpoint_dir, f"step_{self.step_done}")
        tensors = self.checkpoint_tensors()
        if self.device.type != "cpu":  # libmorph reads host memory: stage a CPU copy
            tensors = {k: v.cpu() for k, v in tensors.items()}
        morph.checkpoint.save(path, step=self.step_done, samples=self.samples_done, tensors=tensors,
                              spec=self.spec, layout=self.layout, trainer=self.trainer_info())
        if self.root:
            print(f"train.py: saved checkpoint {path} at step {self.step_done} ({why})", flush=True)

    def load(self, path: str):
        # What the trainer recorded (index.json) is checked before any tensor is read.
        info = morph.checkpoint.read_index(path).get("trainer") or {}
        for key, flag, mine in (("seed", "--seed", self.a.seed), ("samples", "--samples", self.a.samples),
                                ("global_batch", "--global-batch", self.batch)):
            if key in info and info[key] != mine:
                raise TrainError(f"{path}: the checkpoint was trained with {flag} {info[key]}, this run has {mine}: "
                                 "the data order would differ")
        model = os.environ.get("MORPH_MODEL", "")
        if model and info.get("morph_model") and info["morph_model"] != model:
            raise TrainError(f"{path}: a checkpoint of model {info['morph_model']}, this job trains {model}")
        tensors = self.checkpoint_tensors()
        staged = tensors if self.device.type == "cpu" else {k: v.cpu() for k, v in tensors.items()}
        prog = morph.checkpoint.load(path, spec=self.spec, layout=self.layout, tensors=staged)
        if staged is not tensors:
            for k, v in tensors.items():
                v.copy_(staged[k])
        if prog.samples != prog.step * self.batch:
            raise TrainError(f"{path}: progress of {prog.samples} samples at step {prog.step} does not match "
                             f"--global-batch {self.batch}")
        return prog

    def check_padding(self, path: str):
        """Vocabulary padding rows must be zero: the forward pass never reads them, so a
        non-zero value would only show once a reshard moved it into real rows."""
        for name in ("embedding.word_embeddings.weight", "output_layer.weight"):
            for slot in self.state.slots:
                if slot.name == name:
                    w = self.state.view(self.state.params, slot)
                    if torch.count_nonzero(w[self.model.vocab_valid:]).item():
                        raise TrainError(f"{path}: rank {self.plan.rank}: vocabulary padding of '{name}' is not zero")

    # -- setup --

    def start(self):
        """Everything that can refuse the run, before the first step, agreed on by all ranks."""
        rank = self.plan.rank
        if self.a.resume:
            prog = collectively(lambda: self.load(self.a.resume), rank)
            if self.state.zero == 3:  # the file held only this rank's chunk of the parameters
                self.state.gather_params()
            collectively(lambda: self.check_padding(self.a.resume), rank)
            self.step_done, self.samples_done = prog.step, prog.samples
        else:
            with torch.no_grad():
                initialise(self.model, {p["name"]: p for p in self.spec.params()}, self.a.seed, self.par,
                           self.padded_vocab)
        self.state.zero_grad()

        def local_checks():
            save_at = self.a.save_at
            if save_at is not None and save_at <= self.step_done:
                raise TrainError(f"--save-at {save_at}: the checkpoint is already at step {self.step_done}")
            if self.root and save_at is not None:
                path = os.path.join(self.a.checkpoint_dir, f"step_{save_at}")
                if os.path.exists(path):
                    raise TrainError(f"--save-at {save_at}: {path} already exists; a checkpoint is never overwritten")
            if self.root and self.a.loss_log:  # a resumed run continues its loss log
                try:
                    self.loss_log = open(self.a.loss_log, "a" if self.a.resume else "w")
                except OSError as e:
                    raise TrainError(f"--loss-log {self.a.loss_log}: cannot create: {e.strerror}") from e
        collectively(local_checks, rank)
        if self.root and not self.a.quiet:
            how = f"resumed from {self.a.resume} at" if self.a.resume else "fresh start at"
            print(f"train.py: layout {self.layout}, plan {self.plan.text}, {how} step {self.step_done}, "
                  f"training to step {self.a.steps}", flush=True)

    # -- one step --

    def send(self, t: torch.Tensor, dst: int, tag: int):
        t = t.detach().contiguous()
        self.pending_sends.append((dist.isend(t, dst, tag=tag), t))

    def recv(self, n: int, src: int, tag: int) -> torch.Tensor:
        buf = torch.empty(n, self.a.hidden, dtype=self.dtype, device=self.device)
        dist.recv(buf, src, tag=tag)
        return buf

    def step(self, number: int) -> float:
        """One optimizer step on the next global batch; its mean loss (every rank)."""
        par = self.par
        block = morph.dataset.indices(self.samples_done, par.dp_rank, par.dp, samples=self.a.samples,
                                      seed=self.a.seed, global_batch=self.batch)
        micro = micro_batches(block, self.micro_count, self.a.seed, self.a.vocab, self.device)
        self.state.zero_grad()
        scale = 1.0 / self.batch  # the loss is the mean over the GLOBAL batch
        caches: List[Optional[tuple]] = [None] * len(micro)
        loss_sum = 0.0

        def forward(i: int):
            nonlocal loss_sum
            tokens, targets = micro[i]
            if par.first_stage:
                inp, out = None, self.model(tokens)
            else:
                inp = self.recv(len(tokens), par.prev_stage, FORWARD_TAG).requires_grad_()
                out = self.model(inp)
            if par.last_stage:
                total = self.model.loss(out, targets).sum()
                loss_sum += total.item()
                caches[i] = (inp, total * scale)
            else:
                self.send(out, par.next_stage, FORWARD_TAG)
                caches[i] = (inp, out)

        def backward(i: int):
            inp, out = caches[i]
            if par.last_stage:
                out.backward()
            else:
                grad = self.recv(out.shape[0], par.next_stage, BACKWARD_TAG)
                torch.autograd.backward(out, grad)
            if not par.first_stage:
                self.send(inp.grad, par.prev_stage, BACKWARD_TAG)
            caches[i] = None

        m = len(micro)
        if self.a.schedule == "gpipe":  # all forwards, then all backwards
            for i in range(m):
                forward(i)
            for i in range(m):
                backward(i)
        else:  # 1F1B: warm-up forwards, then one forward and one backward, then the rest
            warm = min(par.pp - par.pp_rank - 1, m)
            for i in range(warm):
                forward(i)
            for i in range(m - warm):
                forward(warm + i)
                backward(i)
            for i in range(m - warm, m):
                backward(i)
        for work, _ in self.pending_sends:
            work.wait()
        self.pending_sends.clear()
        self.adam.step(number)
        # Each sample's loss is counted once: by TP rank 0 of the last stage.
        mine = loss_sum if par.last_stage and par.tp_rank == 0 else 0.0
        total = torch.tensor([mine], dtype=torch.float64, device=self.device)
        dist.all_reduce(total)
        return total.item() * scale

    def checkpoint_requested(self) -> bool:
        flag = torch.tensor([int(self.signal is not None and morph.signals.checkpoint_requested())],
                            dtype=torch.int32, device=self.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())

    def run(self) -> int:
        while self.step_done < self.a.steps:
            number = self.step_done + 1
            start = time.perf_counter()
            loss = self.step(number)
            spare = self.least_step_s - (time.perf_counter() - start)
            if spare > 0:
                time.sleep(spare)
            seconds = time.perf_counter() - start
            self.step_done, self.samples_done = number, self.samples_done + self.batch
            if self.root:
                morph.metrics.report(number, seconds, samples=self.batch, loss=loss)
                if self.loss_log:
                    self.loss_log.write("%d %.17g\n" % (number, loss))
                    self.loss_log.flush()
                if not self.a.quiet:
                    print("step %d loss %.17g" % (number, loss), flush=True)
            # One save per step at most: the one that ends the run, else a periodic one.
            at = self.a.save_at is not None and number == self.a.save_at
            asked = not at and self.checkpoint_requested()
            if at or asked:
                self.save("--save-at" if at else f"signal {signal.Signals(self.signal).name}")
                return 0
            if self.a.save_every and number % self.a.save_every == 0 and number < self.a.steps:
                self.save("--save-every")
        return 0

    def close(self):
        if getattr(self, "loss_log", None):
            self.loss_log.close()


def init_distributed(args: argparse.Namespace) -> torch.device:
    """torch.distributed from the environment morphrun sets (RANK, WORLD_SIZE, MASTER_ADDR,
    MASTER_PORT): gloo on the CPU, NCCL on the rank's GPU."""
    device = torch.device("cpu")
    if args.device == "cuda":
        # Under morphrun CUDA_VISIBLE_DEVICES holds the rank's one GPU.
        local = int(os.environ.get("LOCAL_RANK", "0") or 0)
        device = torch.device("cuda", 0 if torch.cuda.device_count() == 1 else local)
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo", init_method="env://")
    return device


def main(argv: Optional[List[str]] = None) -> int:
    rank = os.environ.get("RANK", "0")
    trainer = None
    try:
        try:
            args = parse_args(argv)
            device = init_distributed(args)
        except (TrainError, ValueError, RuntimeError) as e:
            # The same on every rank (options, environment): rank 0 says it.
            raise AgreedError(e if rank == "0" else f"rank {rank}: {e}") from e
        trainer = Trainer(args, device)
        trainer.start()
        return trainer.run()
    except AgreedError as e:  # raised by every rank: rank 0 reports it
        if rank == "0":
            print(f"train.py: {e}", file=sys.stderr, flush=True)
        return 1
    except morph.MorphError as e:  # a failed save: morph.checkpoint raises it on every rank
        if rank == "0":
            print(f"train.py: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        if trainer is not None:
            trainer.close()
        if dist.is_initialized():
            dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
