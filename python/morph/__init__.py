"""Morph's training-side library: the job's plan, the dataset order, checkpoints in
Morph's sharded layout, metrics to morphrun and the checkpoint signal.

Every formula and format lives once, in libmorph (C++); this package is a thin layer of
type hints, docstrings and Python exceptions over it (``morph._native``, pybind11).
Errors are :class:`morph.MorphError` carrying libmorph's message.
"""
from morph._native import MorphError
from morph.plan import Plan, plan
from morph import checkpoint, dataset, metrics, signals

__all__ = ["MorphError", "Plan", "plan", "checkpoint", "dataset", "metrics", "signals"]
