"""Iteration metrics to morphrun: ``STEP SECONDS SAMPLES [LOSS [SIMILARITY]]`` lines on the
FIFO named by MORPH_METRICS (morphrun(1), METRICS; libmorph/launch/metrics_line.h). The
similarity is adaptive batching's gradient similarity, the cosine between the gradients
of the batch's two halves."""
from __future__ import annotations

import math
import os
from typing import Optional, TextIO

from morph import _native
from morph._native import MorphError

_fifo: Optional[TextIO] = None
_gone = False  # the FIFO failed (morphrun, its reader, is gone): nothing more is written


def line(step: int, seconds: float, samples: int, loss: Optional[float] = None,
         similarity: Optional[float] = None) -> str:
    """The protocol line of one iteration (checked as morphrun parses it)."""
    return _native.metrics_line(step, seconds, samples, loss, similarity)


def report(step: int, seconds: float, samples: int, loss: Optional[float] = None,
           similarity: Optional[float] = None) -> bool:
    """Writes one iteration's line to MORPH_METRICS; False (and nothing written) when
    the job runs outside morphrun. Call it on one rank (rank 0).

    What a training loop measures is not checked as :func:`line` checks it, since a
    report never stops training: an iteration timed at no time (a coarse clock), or at
    an infinite or NaN one, is not reported (False); a similarity :func:`line` refuses
    (NaN, as the cosine of a zero gradient) is left out; a loss it refuses (NaN or
    infinite: a diverging run) is left out with the similarity that follows it. A step
    or sample count that is not an integer from 0 to 2**63 - 1 (the line's bound) is not
    reported (False), nor is anything once the FIFO failed (its reader, morphrun, is
    gone). A count above 2**53 reaches the job's metrics file but not morphd: its report
    holds counts up to 2**53 (exact as JSON numbers), and morphrun drops that iteration
    from its reports (the others are sent)."""
    global _fifo, _gone
    if _gone or not (math.isfinite(seconds) and seconds > 0):
        return False
    for kept in ((loss, similarity), (loss, None), (None, None)):
        try:
            text = line(step, seconds, samples, *kept)
            break
        except (MorphError, TypeError):  # TypeError: a count the binding cannot take
            continue
    else:
        return False
    try:
        if _fifo is None:
            path = os.environ.get("MORPH_METRICS", "")
            if not path:
                return False
            _fifo = open(path, "w", buffering=1)
        _fifo.write(text + "\n")
        _fifo.flush()
    except OSError:
        _gone = True
        if _fifo is not None:
            try:
                _fifo.close()
            except OSError:  # its unwritten line fails again
                pass
            _fifo = None
        return False
    return True
