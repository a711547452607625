"""morph.metrics (the line protocol to morphrun) and morph.signals (the checkpoint flag)."""
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import unittest

import morph


class _Reader:
    """The morphrun end of a metrics FIFO, read without blocking."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)

    def read(self):
        return os.read(self.fd, 4096).decode()

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@contextlib.contextmanager
def metrics_fifo():
    """MORPH_METRICS pointing at a fresh FIFO with a reader; morph.metrics reset afterwards."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "fifo")
        os.mkfifo(path)
        reader = _Reader(path)
        saved = os.environ.get("MORPH_METRICS")
        os.environ["MORPH_METRICS"] = path
        try:
            yield reader
        finally:
            reader.close()
            if morph.metrics._fifo:
                morph.metrics._fifo.close()
            morph.metrics._fifo, morph.metrics._gone = None, False
            if saved is None:
                del os.environ["MORPH_METRICS"]
            else:
                os.environ["MORPH_METRICS"] = saved


class MetricsTest(unittest.TestCase):
    def test_lines_are_the_protocol(self):
        self.assertEqual(morph.metrics.line(7, 0.123456789, 64, 1 / 3), "7 0.123456789 64 0.33333333333333331")
        self.assertEqual(morph.metrics.line(8, 0.5, 64), "8 0.5 64")
        with self.assertRaisesRegex(morph.MorphError, "SECONDS"):
            morph.metrics.line(8, 0, 64)
        # Adaptive batching's gradient similarity follows the loss.
        self.assertEqual(morph.metrics.line(9, 0.5, 64, 2.0, similarity=0.75), "9 0.5 64 2 0.75")
        with self.assertRaisesRegex(morph.MorphError, "SIMILARITY"):
            morph.metrics.line(9, 0.5, 64, 2.0, similarity=1.5)
        with self.assertRaisesRegex(morph.MorphError, "needs a LOSS"):
            morph.metrics.line(9, 0.5, 64, similarity=0.5)

    def test_report_writes_to_morph_metrics(self):
        with metrics_fifo() as fifo:
            self.assertTrue(morph.metrics.report(1, 0.5, 16, 2.5))
            self.assertTrue(morph.metrics.report(2, 0.25, 16))
            # A diverging loss and an untimed step do not stop training.
            self.assertTrue(morph.metrics.report(3, 0.25, 16, float("nan"), similarity=0.5))
            self.assertTrue(morph.metrics.report(4, 0.25, 16, float("inf")))
            self.assertFalse(morph.metrics.report(5, 0.0, 16, 2.0))
            self.assertFalse(morph.metrics.report(6, float("nan"), 16, 2.0))
            # A similarity or a loss the line would refuse is left out (it raised).
            self.assertTrue(morph.metrics.report(7, 0.25, 16, 2.0, similarity=float("nan")))
            self.assertTrue(morph.metrics.report(8, 0.25, 16, 1e301, similarity=0.5))
            self.assertEqual(fifo.read(),
                             "1 0.5 16 2.5\n2 0.25 16\n3 0.25 16\n4 0.25 16\n7 0.25 16 2\n8 0.25 16\n")

    def test_a_gone_reader_or_a_bad_count_does_not_stop_training(self):
        # BrokenPipeError once morphrun was gone, TypeError for a count the binding refused.
        with metrics_fifo() as fifo:
            for args in ((-1, 0.5, 16), (1, 0.5, -16), (1.0, 0.5, 16), (2**64, 0.5, 16)):
                self.assertFalse(morph.metrics.report(*args), args)
            self.assertTrue(morph.metrics.report(1, 0.5, 16, 2.0))
            self.assertEqual(fifo.read(), "1 0.5 16 2\n")
            fifo.close()
            self.assertFalse(morph.metrics.report(2, 0.5, 16, 2.0))
            self.assertIsNone(morph.metrics._fifo)
            # Not reopened: with no reader, open() would block.
            self.assertFalse(morph.metrics.report(3, 0.5, 16, 2.0))

    def test_the_documented_count_bound_is_the_lines(self):
        # Review of the Python package: report() and docs/python.md promised counts up to
        # 2**64 - 1, but the line (parse_metrics_line) takes up to 2**63 - 1, and morphd's
        # report (encode_report) up to 2**53, above which morphrun drops the iteration.
        with metrics_fifo() as fifo:
            self.assertTrue(morph.metrics.report(2**63 - 1, 0.5, 2**63 - 1))
            self.assertFalse(morph.metrics.report(2**63, 0.5, 16))
            self.assertFalse(morph.metrics.report(1, 0.5, 2**63))
            self.assertEqual(fifo.read(), f"{2**63 - 1} 0.5 {2**63 - 1}\n")
        doc = " ".join(morph.metrics.report.__doc__.split())
        self.assertIn("from 0 to 2**63 - 1", doc)
        self.assertIn("above 2**53", doc)
        self.assertNotIn("2**64", doc)

    def test_without_morphrun_nothing_is_written(self):
        saved = os.environ.pop("MORPH_METRICS", None)
        try:
            self.assertFalse(morph.metrics.report(1, 0.5, 16))
        finally:
            if saved is not None:
                os.environ["MORPH_METRICS"] = saved


class SignalsTest(unittest.TestCase):
    def test_the_checkpoint_signal_sets_the_flag(self):
        self.assertEqual(morph.signals.install("usr2"), signal.SIGUSR2)
        morph.signals.clear()
        self.assertFalse(morph.signals.checkpoint_requested())
        os.kill(os.getpid(), signal.SIGUSR2)
        self.assertTrue(morph.signals.checkpoint_requested())
        morph.signals.clear()
        self.assertFalse(morph.signals.checkpoint_requested())

    def test_the_signal_during_interpreter_shutdown_does_not_kill_a_finished_trainer(self):
        # CPython resets caught signals to their default action before it clears the
        # modules: the signal that __del__ sends then killed the process (SIGUSR2).
        child = ("import os, signal, morph\n"
                 "class Late:\n"
                 "    def __del__(self): os.kill(os.getpid(), signal.SIGUSR2)\n"
                 "late = Late()\n"
                 "morph.signals.install('SIGUSR2')\n")
        self.assertEqual(subprocess.run([sys.executable, "-c", child], check=False).returncode, 0)

    def test_sigusr1_and_unknown_signals_are_refused(self):
        with self.assertRaisesRegex(morph.MorphError, "SIGUSR1 is caught by NCCL"):
            morph.signals.install("SIGUSR1")
        with self.assertRaisesRegex(morph.MorphError, "SIGFOO"):
            morph.signals.install("SIGFOO")


if __name__ == "__main__":
    unittest.main()
