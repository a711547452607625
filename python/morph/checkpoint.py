"""Checkpoints in Morph's sharded layout (libmorph/state/checkpoint.h): a folder with one
safetensors file per rank and index.json (layout, state spec, progress, each file's size
and XXH3 checksum), written into ``<dir>.partial`` and renamed into place only when every
file is complete and synced. ``morph reshard`` and morphrun move such a checkpoint to
another (dp, tp, pp, ZeRO) layout; the C++ reference trainer reads the same files.

A rank's file holds the tensors :meth:`Spec.local_tensors` lists, in that order
(libmorph/state/shard_map.h):

- ZeRO 0: each parameter's TP shard of its pipeline stage, and ``optim.<state>.<param>``;
- ZeRO 1, 2: the shards, and ``optim.<state>``: this DP rank's chunk of the stage's shards
  flattened in spec order, zero-padded to a multiple of d;
- ZeRO 3: ``params.flat`` and ``optim.<state>``, both chunks of that flattening.

Tensors are passed as NumPy arrays or CPU PyTorch tensors (C-contiguous, of the spec's
dtype, in the machine's byte order; NumPy has no bfloat16: a BF16 tensor is a
torch.bfloat16 tensor or its bits as a uint16 array); libmorph reads and writes their
buffers in place, without copies.
"""
from __future__ import annotations

import json
import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from morph import _native
from morph._native import MorphError


@dataclass(frozen=True)
class LocalTensor:
    """One tensor of a rank's file: its name, local shape and dtype ("f64", "f32"...)."""
    name: str
    shape: Tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Progress:
    """Where a checkpoint stands: optimizer steps done, samples consumed, and what the
    trainer stored beside (index.json's "trainer")."""
    step: int
    samples: int
    trainer: Dict[str, Any] = field(default_factory=dict)


class Spec:
    """What a training state is, independent of its parallelisation (Tenplex's
    parallelizable tensor collection): named global tensors, each with its tensor-parallel
    split and pipeline stage, in ZeRO flattening order, and the optimizer states every
    parameter carries."""

    def __init__(self, native: "_native.StateSpec"):
        self._s = native

    @staticmethod
    def from_rules(rules: str, tensors: Sequence[Tuple[str, Sequence[int]]], *, layers: int,
                   optimizer: Sequence[str] = ("exp_avg", "exp_avg_sq"), dtype: str = "f64",
                   vocab_multiple: int = 128) -> "Spec":
        """The spec of `tensors` (global names and shapes, in flattening order) under a
        framework's naming rules: `rules` is a rule table's path or its name in Morph's
        rules folder ("megatron" for share/rules/megatron.json). A name no rule matches
        is an error."""
        return Spec(_native.spec_from_rules(rules, [(n, list(s)) for n, s in tensors], layers, list(optimizer),
                                            dtype, vocab_multiple))

    @staticmethod
    def from_json(text: str) -> "Spec":
        """A spec as index.json holds it."""
        return Spec(_native.spec_from_json(text))

    def to_json(self) -> str:
        return self._s.to_json()

    @property
    def names(self) -> List[str]:
        """The parameters' names, in flattening order."""
        return self._s.names()

    @property
    def layers(self) -> int:
        return self._s.layers

    def params(self) -> List[Dict[str, Any]]:
        """Each parameter: name, shape (global), split, stage, layer."""
        return json.loads(self._s.to_json())["params"]

    def stage_params(self, layout: str, pp_rank: int) -> List[str]:
        """The parameters pipeline stage `pp_rank` owns under `layout`, in spec order."""
        return self._s.stage_params(layout, pp_rank)

    def layer_range(self, layout: str, pp_rank: int) -> Tuple[int, int]:
        """First and one-past-last layer of pipeline stage `pp_rank`."""
        return tuple(self._s.layer_range(layout, pp_rank))

    def padded_rows(self, rows: int, tp: int) -> int:
        """Rows of a vocabulary-parallel tensor after padding, for `tp` ranks."""
        return self._s.padded_rows(rows, tp)

    def local_tensors(self, layout: str, rank: int) -> List[LocalTensor]:
        """The tensors rank `rank` stores under `layout`, in file order."""
        return [LocalTensor(n, tuple(s), d) for n, s, d in self._s.local_tensors(layout, rank)]

    def check_layout(self, layout: str) -> None:
        """Raises MorphError when the spec cannot be laid out so."""
        self._s.check_layout(layout)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and self.to_json() == other.to_json()


def _buffers(tensors: Mapping[str, Any], *, load: bool = False) -> Dict[str, Any]:
    """NumPy views of the tensors (a CPU PyTorch tensor shares its memory with them).
    `load`: they are to be read into, so a copy in their place would be filled and dropped."""
    out = {}
    for name, t in tensors.items():
        if hasattr(t, "detach") and hasattr(t, "numpy"):  # torch.Tensor, without importing torch
            if getattr(t, "device", None) is not None and t.device.type != "cpu":
                if load:
                    raise MorphError(f"tensor '{name}' is on {t.device}: load into a CPU staging tensor "
                                     f"(s = torch.empty_like(t, device='cpu')), then copy it back (t.copy_(s)); "
                                     f"a copy passed instead is filled and dropped")
                raise MorphError(f"tensor '{name}' is on {t.device}: copy it to the CPU first (t.cpu())")
            t = t.detach()
            if str(t.dtype) == "torch.bfloat16":  # NumPy has none: its bits, as uint16
                import torch
                t = t.view(torch.int16).numpy().view("u2")
            else:
                t = t.numpy()
        out[name] = t
    return out


def _world():
    """(rank, size, all_gather_object, barrier) of torch.distributed, or of one process."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            def gather(obj):
                out = [None] * dist.get_world_size()
                dist.all_gather_object(out, obj)
                return out
            return dist.get_rank(), dist.get_world_size(), gather
    except ImportError:
        pass
    return 0, 1, lambda obj: [obj]


def _agree(gather, error: Optional[str]) -> None:
    """Every rank raises when one failed (the first failure's message), as libmorph's
    collective steps do: no rank goes on with a half-written checkpoint."""
    errors = [e for e in gather(error) if e]
    if errors:
        raise MorphError(errors[0])


def _message(e: Exception) -> str:
    """What a failed step says to every rank: any exception, not only MorphError, since a
    rank that raised alone would leave the others waiting in the next collective."""
    return str(e) if isinstance(e, MorphError) else f"{type(e).__name__}: {e}"


def save(directory: str, *, step: int, samples: int, tensors: Mapping[str, Any], spec: Spec, layout: str,
         trainer: Optional[Mapping[str, Any]] = None) -> None:
    """Writes checkpoint `directory` (which must not exist): collective over
    torch.distributed's world when it is initialised, whose rank is the file's rank.
    `tensors` maps every name of ``spec.local_tensors(layout, rank)`` to its buffer;
    `trainer` (JSON) is stored in index.json for the run that resumes (seed, dataset...).
    Until the commit the previous checkpoint stands; a failure on any rank raises on all
    and leaves no partial checkpoint behind."""
    rank, size, gather = _world()
    stage, trainer_json = None, None
    error = None
    try:
        try:
            _native.check_world(layout, size)
            for name, value in (("step", step), ("samples", samples)):  # index.json's integers
                if not (isinstance(value, numbers.Integral) and 0 <= value < 2**63):
                    raise MorphError(f"{name} {value!r}: want an integer, 0 <= {name} < 2**63")
            try:  # on every rank, before any file; NaN and infinities are not JSON
                trainer_json = json.dumps(dict(trainer or {}), allow_nan=False)
            except (TypeError, ValueError, RecursionError) as e:
                raise MorphError(f"trainer: not JSON: {e}") from e
            _native.check_trainer_json(trainer_json)  # nested as deep as index.json can be read
            if rank == 0:
                stage = _native.CheckpointStage(directory)
        except Exception as e:  # pylint: disable=broad-except
            error = _message(e)
        _agree(gather, error)
        entry, error = None, None
        try:
            entry = _native.write_shard(_native.stage_folder(directory), spec._s, layout, rank, _buffers(tensors))
        except Exception as e:  # pylint: disable=broad-except
            error = f"rank {rank}: {_message(e)}"
        entries = gather((entry, error))
        errors = [e for _, e in entries if e]
        if errors:
            raise MorphError(errors[0])
        error = None
        try:
            if rank == 0:
                stage.commit(spec._s, layout, int(step), int(samples), trainer_json, [e for e, _ in entries])
        except Exception as e:  # pylint: disable=broad-except
            error = _message(e)
        _agree(gather, error)
    finally:
        # A failed save's stage (and its lock) goes now, not with the exception's traceback,
        # which holds this frame: a retry of the same checkpoint would find it locked.
        stage = None


def read_index(directory: str) -> Dict[str, Any]:
    """index.json of a checkpoint, checked (format, layout, files): layout, spec,
    progress, trainer, files."""
    return json.loads(_native.read_index(directory))


def load(directory: str, *, spec: Spec, layout: str, tensors: Mapping[str, Any], rank: Optional[int] = None) -> Progress:
    """Reads this rank's file of checkpoint `directory` into `tensors` (every name of
    ``spec.local_tensors(layout, rank)``) after checking that the checkpoint has this
    layout and this spec (another layout: reshard it first, ``morph reshard``; another
    model: refused) and that the file's size and checksum are those of the index. The
    rank is torch.distributed's unless given, and then its world must have the layout's
    ranks (as for :func:`save`). Raises MorphError naming what is wrong; no tensor is
    written before every check passed."""
    if rank is None:
        rank, size, _ = _world()
        try:
            _native.check_world(layout, size)
        except MorphError as e:  # a process outside its world would read rank 0's file
            raise MorphError(f"{e}: initialise torch.distributed first, or pass rank=") from None
    step, samples, trainer = _native.read_shard(directory, spec._s, layout, rank, _buffers(tensors, load=True))
    return Progress(step, samples, json.loads(trainer))

