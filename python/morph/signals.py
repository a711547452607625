"""The checkpoint signal (MORPH_CHECKPOINT_SIGNAL, SIGUSR2 by default) as a flag the
training loop polls: morphrun forwards it when the job is to be checkpointed (a replan
or a requeue); the loop finishes its step, saves and exits 0."""
from __future__ import annotations

import os
import signal as _signal
from typing import Optional

from morph import _native

_requested = False
_installed: Optional[int] = None


def _handler(signum, frame):  # noqa: ARG001
    global _requested
    _requested = True


def install(name: Optional[str] = None) -> int:
    """Catches the checkpoint signal (`name`, else MORPH_CHECKPOINT_SIGNAL, else SIGUSR2);
    returns its number. Called by :func:`checkpoint_requested` on first use; call it
    early (before the first step) so that no signal finds the default action."""
    global _installed
    number = _native.signal_number(name or os.environ.get("MORPH_CHECKPOINT_SIGNAL", "") or "SIGUSR2")
    _signal.signal(number, _handler)
    _installed = number
    return number


def checkpoint_requested() -> bool:
    """True once the checkpoint signal has arrived. Ranks must agree before they act
    (one all-reduce of the flag): only rank 0 may have received it."""
    if _installed is None:
        install()
    return _requested


def clear() -> None:
    """Forgets a received signal (after the checkpoint it asked for)."""
    global _requested
    _requested = False
