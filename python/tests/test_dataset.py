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

    def test_an_epoch_is_a_permutation_and_epochs_differ(self):
        first = morph.dataset.epoch_permutation(0, samples=1000, seed=7)
        self.assertEqual(sorted(first), list(range(1000)))
        self.assertNotEqual(first, morph.dataset.epoch_permutation(1, samples=1000, seed=7))
        self.assertEqual(morph.dataset.batch(0, **ORDER), first[:24])

    def test_bad_progress_and_ranks_are_refused(self):
        with self.assertRaisesRegex(morph.MorphError, "multiple"):
            morph.dataset.indices(5, 0, 2, **ORDER)
        with self.assertRaisesRegex(morph.MorphError, "dp_rank 2 of dp 2"):
            morph.dataset.indices(0, 2, 2, **ORDER)


if __name__ == "__main__":
    unittest.main()
