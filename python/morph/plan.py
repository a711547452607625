"""The job's execution plan and this rank's place in it, as morphrun exports them."""
from __future__ import annotations

import os
from typing import List, Mapping, Optional

from morph import _native


class Plan:
    """An execution plan (Morphling §3) and one rank's coordinates in it.

    Ranks follow Megatron-LM's order, tensor parallelism innermost:
    ``rank = pp_rank * (tp * dp) + dp_rank * tp + tp_rank``.
    """

    def __init__(self, native: "_native.RankPlan"):
        self._p = native

    # The plan (libmorph/plan/plan.h).
    dp = property(lambda self: self._p.dp, doc="data-parallel size d")
    tp = property(lambda self: self._p.tp, doc="tensor-parallel size t")
    pp = property(lambda self: self._p.pp, doc="pipeline-parallel size p")
    zero = property(lambda self: self._p.zero, doc="ZeRO-DP stage, 0 to 3")
    offload = property(lambda self: self._p.offload, doc="ZeRO-Offload")
    gc = property(lambda self: self._p.gc, doc="gradient checkpointing")
    ga = property(lambda self: self._p.ga, doc="gradient accumulation steps")
    micro_batches = property(lambda self: self._p.micro_batches, doc="micro-batches per pipeline flush")
    micro_batch = property(lambda self: self._p.micro_batch, doc="samples per micro-batch and replica")
    global_batch = property(lambda self: self._p.global_batch, doc="dp * ga * micro_batches * micro_batch")
    batch = property(
        lambda self: self._p.batch,
        doc="the job's global batch (MORPH_GLOBAL_BATCH): global_batch, except under a heterogeneous plan, whose "
            "ranks take MORPH_LOCAL_BATCH x MORPH_WORKERS x MORPH_GA samples each, or --morph-adaptive-batch")
    # The rank.
    rank = property(lambda self: self._p.rank)
    world_size = property(lambda self: self._p.world_size)
    local_rank = property(lambda self: self._p.local_rank)
    dp_rank = property(lambda self: self._p.dp_rank)
    tp_rank = property(lambda self: self._p.tp_rank)
    pp_rank = property(lambda self: self._p.pp_rank)
    # What the job runs.
    model = property(lambda self: self._p.model, doc="MORPH_MODEL ('' when unset)")
    predicted_iteration_s = property(
        lambda self: self._p.predicted_iteration_s,
        doc="the iteration time Morph predicted for this plan (the record's iter_ms; 0 without MORPH_RECORD)")
    framework = property(lambda self: self._p.framework, doc="MORPH_FRAMEWORK ('' when unset)")

    @property
    def layout(self) -> str:
        """The checkpoint layout this plan trains in: ``dp=D,tp=T,pp=P,zero=Z``."""
        return self._p.layout

    @property
    def text(self) -> str:
        """The plan's one-line form (MORPH_PLAN): ``dp=4 tp=2 pp=1 zero=1 ...``."""
        return self._p.text

    def rank_of(self, dp_rank: int, tp_rank: int, pp_rank: int) -> int:
        """The global rank at these coordinates."""
        return self._p.rank_of(dp_rank, tp_rank, pp_rank)

    def groups(self, kind: str) -> List[List[int]]:
        """Every group of one kind, each a list of global ranks in group-rank order:
        ``"tp"`` (same dp and pp rank), ``"dp"`` (same tp and pp), ``"pp"`` (same dp
        and tp). torch.distributed.new_group must be called by every rank for every
        group, in the same order: this is that order."""
        return self._p.groups(kind)

    def group(self, kind: str) -> List[int]:
        """This rank's group of `kind` (see :meth:`groups`)."""
        return self._p.group(kind)

    def __repr__(self) -> str:
        return f"morph.Plan({self.text!r}, rank={self.rank})"


def plan(environ: Optional[Mapping[str, str]] = None) -> Plan:
    """The plan of this rank, from what morphrun exports (MORPH_PLAN, RANK, WORLD_SIZE,
    LOCAL_RANK, MORPH_DP_RANK, MORPH_TP_RANK, MORPH_PP_RANK, MORPH_MODEL, MORPH_RECORD...).

    Validated as libmorph validates it: the plan's shape, a world size equal to its
    GPUs, a rank inside it, coordinates that agree with the rank, and a job record
    (MORPH_RECORD, when set) whose plan is MORPH_PLAN, and a MORPH_GLOBAL_BATCH that is
    the plan's unless the record makes the plan heterogeneous or the batch adaptive. Raises
    :class:`morph.MorphError` naming what is wrong.
    """
    env = dict(os.environ if environ is None else environ)
    return Plan(_native.rank_plan(env))
