"""The checkpoint signal (MORPH_CHECKPOINT_SIGNAL, SIGUSR2 by default) as a flag the
training loop polls: morphrun forwards it when the job is to be checkpointed (a replan
or a requeue); the loop finishes its step, saves and exits 0."""
from __future__ import annotations

import atexit
import os
import signal as _signal
from typing import Optional, Set

from morph import _native

_requested = False
_installed: Optional[int] = None
_caught: Set[int] = set()


def _ignore_at_exit() -> None:
    """CPython resets the signals it catches to their default action as the interpreter
    shuts down: a checkpoint signal then would kill a trainer that finished its work
    (morphrun would see a failure and requeue it). From here on the signal is ignored."""
    for number in _caught:
        _signal.signal(number, _signal.SIG_IGN)


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
    if not _caught:
        atexit.register(_ignore_at_exit)
    _caught.add(number)
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
