"""The order in which a job sees its samples (Tenplex rule, libmorph/state/dataset_order.h).

One seeded permutation of the dataset per epoch, concatenated into one stream; global
batch i is ``stream[i*B:(i+1)*B]``; DP rank r of d takes the contiguous block
``[r*k, min((r+1)*k, B))`` of it, ``k = ceil(B / d)``, so the last ranks' blocks may be
short or empty even when d <= B (B = 24, d = 7: 4, 4, 4, 4, 4, 4, 0). Progress is counted
in samples, so a job resumed under another d sees the same global batches.
"""
from __future__ import annotations

from typing import List

from morph import _native


def indices(progress: int, dp_rank: int, dp: int, *, samples: int, seed: int, global_batch: int,
            adaptive: bool = False) -> List[int]:
    """This DP rank's sample indices of the global batch that starts `progress` samples
    into the stream. ``progress`` is a multiple of ``global_batch``, which catches a
    resume under another batch, unless ``adaptive``: a job whose batch changes as it
    trains (``--morph-adaptive-batch``) resumes where its last batch, of another size,
    ended."""
    return _native.rank_indices(samples, seed, global_batch, progress, dp_rank, dp, adaptive)


def batch(progress: int, *, samples: int, seed: int, global_batch: int, adaptive: bool = False) -> List[int]:
    """All sample indices of the global batch that starts `progress` samples in
    (``adaptive`` as for :func:`indices`)."""
    return _native.batch_indices(samples, seed, global_batch, progress, adaptive)


def epoch_permutation(epoch: int, *, samples: int, seed: int) -> List[int]:
    """The permutation of one epoch."""
    return _native.epoch_permutation(samples, seed, epoch)
