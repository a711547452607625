"""morph.checkpoint: a rank's file written from and read into the caller's buffers, the
same format `morph reshard` and the C++ reference trainer use."""
import json
import os
import subprocess
import tempfile
import unittest
from unittest import mock

import numpy as np

try:
    import torch
except ImportError:
    torch = None

import morph
from support import spec

ONE = "dp=1,tp=1,pp=1,zero=0"


def filled(s, layout, rank=0, seed=0):
    """Random buffers for every tensor of the rank's file (vocabulary padding rows 0)."""
    rng = np.random.default_rng(seed)
    out = {}
    for t in s.local_tensors(layout, rank):
        a = rng.standard_normal(t.shape)
        if t.name.endswith(("word_embeddings.weight", "output_layer.weight")) and layout == ONE:
            a[50:] = 0  # padding rows beyond the vocabulary
        out[t.name] = a
    return out


def zeros(s, layout, rank=0):
    return {t.name: np.zeros(t.shape) for t in s.local_tensors(layout, rank)}


class CheckpointTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "step_3")
        self.spec = spec()

    def tearDown(self):
        self.tmp.cleanup()

    def save(self, tensors, layout=ONE, directory=None, **kw):
        morph.checkpoint.save(directory or self.dir, step=3, samples=48, tensors=tensors, spec=self.spec, layout=layout,
                              trainer={"seed": 1, "global_batch": 16}, **kw)

    def test_the_files_a_rank_stores_follow_the_layout(self):
        names = [t.name for t in self.spec.local_tensors("dp=2,tp=2,pp=2,zero=0", 5)]
        self.assertIn("layers.1.mlp.dense_h_to_4h.weight", names)
        self.assertIn("optim.exp_avg.output_layer.weight", names)
        self.assertNotIn("embedding.word_embeddings.weight", names)  # stage 1 of 2
        head = {t.name: t for t in self.spec.local_tensors("dp=2,tp=2,pp=2,zero=0", 5)}["output_layer.weight"]
        self.assertEqual(head.shape, (28, 16))  # 50 rows padded to a multiple of 4 t = 8: 56, over 2
        z1 = [t.name for t in self.spec.local_tensors("dp=2,tp=2,pp=2,zero=1", 5)]
        self.assertIn("optim.exp_avg", z1)
        self.assertIn("params.flat", [t.name for t in self.spec.local_tensors("dp=2,tp=2,pp=2,zero=3", 5)])
        self.assertEqual(self.spec.stage_params("dp=1,tp=1,pp=2,zero=0", 0)[0], "embedding.word_embeddings.weight")
        self.assertEqual(self.spec.layer_range("dp=1,tp=1,pp=2,zero=0", 1), (1, 2))
        with self.assertRaisesRegex(morph.MorphError, "stage"):
            self.spec.check_layout("dp=1,tp=1,pp=3,zero=0")  # 3 stages, 2 layers
        self.assertEqual(self.spec.padded_rows(50, 2), 56)
        for tp in (0, -1):  # 0 divided by zero in libmorph (SIGFPE), -1 gave 44
            with self.assertRaisesRegex(morph.MorphError, rf"padded_rows.50, {tp}.: want 0 <= rows <= 2\^40, tp >= 1"):
                self.spec.padded_rows(50, tp)

    def test_padded_rows_are_bounded_as_a_tensor_dimension(self):
        # Review of the Python package: only rows >= 0 was checked; rows + 4 * 3 - 1
        # overflowed, and padded_rows(2**63 - 1, 3) returned a negative number.
        self.assertEqual(self.spec.padded_rows(2**40, 3), 2**40 + 8)  # the largest dimension a spec holds
        for rows in (2**63 - 1, 2**40 + 1):
            with self.subTest(rows=rows), \
                    self.assertRaisesRegex(morph.MorphError, rf"padded_rows.{rows}, 3.: want 0 <= rows <= 2\^40"):
                self.spec.padded_rows(rows, 3)

    def test_round_trip_in_place(self):
        tensors = filled(self.spec, ONE)
        self.save(tensors)
        index = morph.checkpoint.read_index(self.dir)
        self.assertEqual(index["layout"], ONE)
        self.assertEqual(index["progress"], {"step": 3, "samples": 48})
        self.assertEqual(index["trainer"]["seed"], 1)
        back = zeros(self.spec, ONE)
        buffers = {k: v.ctypes.data for k, v in back.items()}
        progress = morph.checkpoint.load(self.dir, spec=self.spec, layout=ONE, tensors=back)
        self.assertEqual((progress.step, progress.samples), (3, 48))
        for name, a in tensors.items():
            np.testing.assert_array_equal(back[name], a, err_msg=name)
            self.assertEqual(back[name].ctypes.data, buffers[name])  # read into the caller's memory

    def test_a_checkpoint_is_never_overwritten_and_a_failed_save_leaves_nothing(self):
        self.save(filled(self.spec, ONE))
        with self.assertRaisesRegex(morph.MorphError, "exists"):
            self.save(filled(self.spec, ONE))
        other = os.path.join(self.tmp.name, "step_4")
        bad = filled(self.spec, ONE)
        del bad["final_layernorm.weight"]
        with self.assertRaisesRegex(morph.MorphError, "final_layernorm.weight"):
            self.save(bad, directory=other)
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["step_3"])

    def test_a_trainer_field_that_is_not_json_or_a_bad_progress_is_refused_before_any_file(self):
        # On every rank before any write (it was json.dumps on rank 0 at the commit: a
        # TypeError there alone, the other ranks waiting for it in the next collective).
        # NaN passed json.dumps and a negative or 64-bit count the Python side, to fail at
        # the commit after every rank had written its file.
        cases = [(dict(trainer={"seed": object()}), "trainer: not JSON"),
                 (dict(trainer={"lr": float("nan")}), "trainer: not JSON: Out of range float"),
                 (dict(trainer={"lr": float("inf")}), "trainer: not JSON: Out of range float"),
                 (dict(step=-1), r"step -1: want an integer, 0 <= step < 2\*\*63"),
                 (dict(step=1.5), "step 1.5: want an integer"),
                 (dict(samples=2**64), "samples 18446744073709551616: want an integer")]
        for kw, message in cases:
            with self.subTest(message=message), mock.patch.object(morph.checkpoint._native, "write_shard") as write, \
                    self.assertRaisesRegex(morph.MorphError, message):
                morph.checkpoint.save(self.dir, tensors=filled(self.spec, ONE), spec=self.spec, layout=ONE,
                                      **dict(dict(step=3, samples=48), **kw))
            write.assert_not_called()
        self.assertEqual(os.listdir(self.tmp.name), [])

    def test_a_trainer_nested_deeper_than_the_index_is_read_is_refused_before_any_file(self):
        # Review of the Python package: the trainer's JSON had no depth limit, but
        # read_index refuses index.json past 64 levels: a trainer nested 70 deep saved, and
        # the load of its checkpoint failed.
        def nested(levels):
            value = {}
            for _ in range(levels - 1):
                value = {"a": value}
            return value
        for levels in (64, 70):
            with self.subTest(levels=levels), mock.patch.object(morph.checkpoint._native, "write_shard") as write, \
                    self.assertRaisesRegex(morph.MorphError, "trainer: JSON nested deeper than 63 levels"):
                morph.checkpoint.save(self.dir, step=3, samples=48, tensors=filled(self.spec, ONE), spec=self.spec,
                                      layout=ONE, trainer=nested(levels))
            write.assert_not_called()
        self.assertEqual(os.listdir(self.tmp.name), [])
        # The deepest one saved is read back: index.json's 64 levels with it.
        morph.checkpoint.save(self.dir, step=3, samples=48, tensors=filled(self.spec, ONE), spec=self.spec, layout=ONE,
                              trainer=nested(63))
        progress = morph.checkpoint.load(self.dir, spec=self.spec, layout=ONE, tensors=zeros(self.spec, ONE))
        self.assertEqual(progress.trainer, nested(63))

    def test_a_refused_load_says_to_copy_back_never_to_pass_a_copy(self):
        # Review of the Python package: load gave save's hints ("pass t.contiguous()",
        # "a.astype(...)", "copy it to the CPU first (t.cpu())"): followed, they load into a
        # throwaway copy, and training resumes silently from the model's random weights.
        saved = filled(self.spec, ONE)
        self.save(saved)
        name = "output_layer.weight"
        bad = [np.asfortranarray(np.zeros((52, 16))), np.zeros((52, 16), dtype=">f8")]
        if torch is not None:
            bad += [torch.zeros(16, 52, dtype=torch.float64).T, torch.zeros(52, 16, dtype=torch.float64, device="meta")]
        for value in bad:
            with self.subTest(value=type(value).__name__), self.assertRaises(morph.MorphError) as caught:
                morph.checkpoint.load(self.dir, spec=self.spec, layout=ONE,
                                      tensors=dict(zeros(self.spec, ONE), **{name: value}))
            message = str(caught.exception)
            self.assertIn("then copy it back", message)
            for hint in ("pass t.contiguous()", "pass a.astype", "(t.cpu())"):
                self.assertNotIn(hint, message)
        # The hint followed: a staging array loaded and copied back into the caller's.
        target = np.asfortranarray(np.zeros((52, 16)))
        staging = np.ascontiguousarray(target)
        with_staging = dict(zeros(self.spec, ONE), **{name: staging})
        morph.checkpoint.load(self.dir, spec=self.spec, layout=ONE, tensors=with_staging)
        target[...] = staging
        np.testing.assert_array_equal(target, saved[name])

    def test_buffers_must_be_what_the_file_stores(self):
        base = filled(self.spec, ONE)
        cases = [
            ("output_layer.weight", base["output_layer.weight"].astype(np.float32), "dtype float32.*F64"),
            ("output_layer.weight", np.asfortranarray(base["output_layer.weight"]), "not contiguous"),
            ("output_layer.weight", base["output_layer.weight"][:10], r"shape \[10, 16\], the checkpoint stores \[52, 16\]"),
            # Only the byte count was checked: a transposed weight went to the file as it was.
            ("layers.0.mlp.dense_h_to_4h.weight", base["layers.0.mlp.dense_h_to_4h.weight"].T.copy(),
             r"shape \[16, 64\], the checkpoint stores \[64, 16\]"),
            ("layers.0.mlp.dense_4h_to_h.bias", np.zeros((2, 8)), r"shape \[2, 8\], the checkpoint stores \[16\]"),
            ("output_layer.weight", [[0.0]], "NumPy array or a CPU torch.Tensor"),
            # Its bytes would go to the file as they are (it was written and read back swapped).
            ("output_layer.weight", base["output_layer.weight"].astype(">f8"), "byte order"),
        ]
        for i, (name, value, message) in enumerate(cases):
            with self.subTest(message=message), self.assertRaisesRegex(morph.MorphError, message):
                self.save(dict(base, **{name: value}), directory=os.path.join(self.tmp.name, f"bad_{i}"))
        self.save(base)
        flat = dict(zeros(self.spec, ONE), **{"layers.0.mlp.dense_h_to_4h.weight": np.zeros(1024)})
        with self.assertRaisesRegex(morph.MorphError, r"shape \[1024\], the checkpoint stores \[64, 16\]"):
            morph.checkpoint.load(self.dir, spec=self.spec, layout=ONE, tensors=flat)

    def test_a_failed_save_whose_error_is_kept_does_not_lock_its_retry(self):
        # The stage lived on in the traceback's frame: its lock refused the retry ("another
        # process is writing it") and <dir>.partial stayed, as long as the error was kept.
        bad = filled(self.spec, ONE)
        del bad["final_layernorm.weight"]
        try:
            self.save(bad)
        except morph.MorphError as e:
            kept = e
        self.assertIn("final_layernorm.weight", str(kept))
        self.assertEqual(os.listdir(self.tmp.name), [])
        self.save(filled(self.spec, ONE))
        self.assertEqual(morph.checkpoint.read_index(self.dir)["progress"]["step"], 3)

    @unittest.skipUnless(torch, "PyTorch is not installed")
    def test_bf16_tensors_round_trip(self):
        # NumPy has no bfloat16: a BF16 spec took no buffer at all (torch's .numpy() raised).
        s = spec(dtype="bf16")
        tensors = {t.name: torch.randn(t.shape).to(torch.bfloat16) for t in s.local_tensors(ONE, 0)}
        morph.checkpoint.save(self.dir, step=3, samples=48, tensors=tensors, spec=s, layout=ONE)
        back = {t.name: torch.zeros(t.shape, dtype=torch.bfloat16) for t in s.local_tensors(ONE, 0)}
        morph.checkpoint.load(self.dir, spec=s, layout=ONE, tensors=back)
        for name, t in tensors.items():
            self.assertTrue(torch.equal(back[name], t), name)
        halves = dict(back, **{"output_layer.weight": back["output_layer.weight"].half()})
        with self.assertRaisesRegex(morph.MorphError, "float16, the checkpoint stores BF16"):
            morph.checkpoint.load(self.dir, spec=s, layout=ONE, tensors=halves)
        with self.assertRaisesRegex(morph.MorphError, "uint16 .a torch.bfloat16.s bits., the checkpoint stores F64"):
            self.save(dict(filled(self.spec, ONE), **{"output_layer.weight": back["output_layer.weight"]}),
                      directory=os.path.join(self.tmp.name, "f64"))

    def test_another_layout_another_model_or_no_checkpoint_is_refused_before_a_buffer_is_touched(self):
        self.save(filled(self.spec, ONE))
        two = "dp=1,tp=2,pp=1,zero=0"
        untouched = zeros(self.spec, two, 0)
        with self.assertRaisesRegex(morph.MorphError, "layout dp=1,tp=1,pp=1,zero=0, this run dp=1,tp=2.*morph reshard"):
            morph.checkpoint.load(self.dir, spec=self.spec, layout=two, tensors=untouched, rank=0)
        wider = spec(hidden=32)
        with self.assertRaisesRegex(morph.MorphError, "another model: parameter 0 .*50x16 F64 there.*50x32 F64 here"):
            morph.checkpoint.load(self.dir, spec=wider, layout=ONE, tensors=zeros(wider, ONE))
        with self.assertRaisesRegex(morph.MorphError, "index.json"):
            morph.checkpoint.load(os.path.join(self.tmp.name, "step_9"), spec=self.spec, layout=ONE,
                                  tensors=zeros(self.spec, ONE))
        self.assertTrue(all(not a.any() for a in untouched.values()))

    def test_a_damaged_file_is_refused(self):
        self.save(filled(self.spec, ONE))
        path = os.path.join(self.dir, "rank_00000.safetensors")
        with open(path, "r+b") as f:
            f.seek(-8, os.SEEK_END)
            f.write(b"\x01" * 8)
        with self.assertRaisesRegex(morph.MorphError, "checksum"):
            morph.checkpoint.load(self.dir, spec=self.spec, layout=ONE, tensors=zeros(self.spec, ONE))

    @unittest.skipUnless(os.environ.get("MORPH"), "MORPH (the morph CLI) is not set: run under make check")
    def test_morph_reshard_moves_it_and_the_shards_hold_the_global_rows(self):
        tensors = filled(self.spec, ONE)
        self.save(tensors)
        resharded = os.path.join(self.tmp.name, "step_3.tp2")
        two = "dp=1,tp=2,pp=1,zero=1"
        subprocess.run([os.environ["MORPH"], "reshard", "--from", self.dir, "--to", resharded, "--layout", two],
                       check=True, stdout=subprocess.DEVNULL)
        # 50 rows padded to 56 for t = 2 (52 for t = 1): rank r holds rows 28 r .. 28 r + 27.
        head = np.vstack([tensors["output_layer.weight"][:50], np.zeros((6, 16))])
        w1 = tensors["layers.0.mlp.dense_h_to_4h.weight"]  # column-parallel: 32 rows each
        for rank in (0, 1):
            back = zeros(self.spec, two, rank)
            progress = morph.checkpoint.load(resharded, spec=self.spec, layout=two, tensors=back, rank=rank)
            self.assertEqual(progress.step, 3)
            np.testing.assert_array_equal(back["output_layer.weight"], head[28 * rank:28 * rank + 28])
            np.testing.assert_array_equal(back["layers.0.mlp.dense_h_to_4h.weight"], w1[32 * rank:32 * rank + 32])

    @unittest.skipUnless(os.environ.get("MORPH"), "MORPH (the morph CLI) is not set: run under make check")
    def test_a_load_outside_the_layouts_world_needs_its_rank(self):
        # Without torch.distributed every process was rank 0: rank 1 read rank 0's file.
        self.save(filled(self.spec, ONE))
        two = os.path.join(self.tmp.name, "step_3.dp2")
        layout = "dp=2,tp=1,pp=1,zero=1"
        subprocess.run([os.environ["MORPH"], "reshard", "--from", self.dir, "--to", two, "--layout", layout],
                       check=True, stdout=subprocess.DEVNULL)
        untouched = zeros(self.spec, layout, 1)
        with self.assertRaisesRegex(morph.MorphError, "has 2 ranks, the world 1: initialise torch.distributed first, "
                                                      "or pass rank="):
            morph.checkpoint.load(two, spec=self.spec, layout=layout, tensors=untouched)
        self.assertTrue(all(not a.any() for a in untouched.values()))
        self.assertEqual(morph.checkpoint.load(two, spec=self.spec, layout=layout, tensors=untouched, rank=1).step, 3)


if __name__ == "__main__":
    unittest.main()
