"""morph.dataset: the one sample order (Tenplex rule), whatever the DP size."""
import unittest

import morph

ORDER = dict(samples=1000, seed=7, global_batch=24)


class DatasetTest(unittest.TestCase):
    def test_dp_blocks_make_up_the_global_batch_for_any_dp(self):
        for progress in (0, 24, 24 * 41):  # 41 batches in: the second epoch
            batch = morph.dataset.batch(progress, **ORDER)
            self.assertEqual(len(batch), 24)
            for dp in (1, 2, 3, 5, 8):
                blocks = [morph.dataset.indices(progress, r, dp, **ORDER) for r in range(dp)]
                self.assertEqual(sum(blocks, []), batch, (progress, dp))
        # k = ceil(B / d) each: the last ranks' blocks may be empty though d <= B.
        self.assertEqual([len(morph.dataset.indices(0, r, 7, **ORDER)) for r in range(7)], [4, 4, 4, 4, 4, 4, 0])

    def test_an_epoch_is_a_permutation_and_epochs_differ(self):
        first = morph.dataset.epoch_permutation(0, samples=1000, seed=7)
        self.assertEqual(sorted(first), list(range(1000)))
        self.assertNotEqual(first, morph.dataset.epoch_permutation(1, samples=1000, seed=7))
        self.assertEqual(morph.dataset.batch(0, **ORDER), first[:24])

    def test_interleaved_orders_and_jumps_read_as_fresh_streams(self):
        # The module keeps the last stream (its epoch's permutation) between calls: other
        # seeds, batch sizes and progress points in any order must not see it.
        perms = {(seed, e): morph.dataset.epoch_permutation(e, samples=1000, seed=seed)
                 for seed in (7, 8) for e in range(3)}

        def expected(progress, seed, global_batch):
            stream = perms[(seed, 0)] + perms[(seed, 1)] + perms[(seed, 2)]
            return stream[progress:progress + global_batch]

        for progress, seed, global_batch in ((24 * 41, 7, 24), (0, 8, 24), (24 * 40, 7, 24), (1600, 7, 32),
                                             (0, 7, 32), (1984, 8, 32), (24 * 83, 7, 24)):
            args = dict(samples=1000, seed=seed, global_batch=global_batch)
            self.assertEqual(morph.dataset.batch(progress, **args), expected(progress, seed, global_batch),
                             (progress, seed, global_batch))
            self.assertEqual(morph.dataset.indices(progress, 1, 2, **args),
                             expected(progress, seed, global_batch)[global_batch // 2:])

    def test_an_adaptive_job_resumes_where_its_last_batch_of_another_size_ended(self):
        # 2 batches of 24, then the job grew its batch to 32 and was resumed at 48 + 32.
        stream = sum((morph.dataset.epoch_permutation(e, samples=1000, seed=7) for e in range(2)), [])
        grown = dict(samples=1000, seed=7, global_batch=32)
        with self.assertRaisesRegex(morph.MorphError, "multiple"):
            morph.dataset.batch(80, **grown)
        self.assertEqual(morph.dataset.batch(80, adaptive=True, **grown), stream[80:112])
        self.assertEqual(morph.dataset.indices(80, 1, 2, adaptive=True, **grown), stream[96:112])
        self.assertEqual(morph.dataset.batch(990, adaptive=True, **grown), stream[990:1022])  # across the epoch
        self.assertEqual(morph.dataset.batch(48, **ORDER), stream[48:72])  # the next plain call is plain
        with self.assertRaisesRegex(morph.MorphError, "global batch size must be > 0"):
            morph.dataset.batch(0, samples=1000, seed=7, global_batch=0, adaptive=True)

    def test_bad_progress_and_ranks_are_refused(self):
        with self.assertRaisesRegex(morph.MorphError, "multiple"):
            morph.dataset.indices(5, 0, 2, **ORDER)
        with self.assertRaisesRegex(morph.MorphError, "dp_rank 2 of dp 2"):
            morph.dataset.indices(0, 2, 2, **ORDER)
        with self.assertRaisesRegex(morph.MorphError, "global batch size must be > 0"):
            morph.dataset.batch(0, samples=1000, seed=7, global_batch=0)
        self.assertEqual(morph.dataset.batch(24, **ORDER),  # still usable
                         morph.dataset.epoch_permutation(0, samples=1000, seed=7)[24:48])


if __name__ == "__main__":
    unittest.main()
