#!/usr/bin/env python3
"""compare_losses.py WHAT REFERENCE LOG [FIRST_STEP [LAST_STEP]]: the largest relative
difference between two "STEP LOSS" logs over their common steps from FIRST_STEP (default 1),
which must reach LAST_STEP (default 10). Prints "<what> max_rel_loss_diff <x>", or "FAIL ..."
and exits 1 when it is above 1e-5 or the logs cannot be compared."""
import sys

TOLERANCE = 1e-5


def read(path):
    with open(path) as f:
        return {int(line.split()[0]): float(line.split()[1]) for line in f if line.strip()}


def main(argv):
    what, reference, log = argv[:3]
    first = int(argv[3]) if len(argv) > 3 else 1
    last = int(argv[4]) if len(argv) > 4 else 10
    try:
        a, b = read(reference), read(log)
    except (OSError, ValueError, IndexError) as e:
        print(f"FAIL {what}: cannot compare: {e}")
        return 1
    steps = [s for s in sorted(set(a) & set(b)) if s >= first]
    if not steps or steps[-1] != last:
        print(f"FAIL {what}: cannot compare: common steps {steps}, not up to step {last}")
        return 1
    d = max(abs(a[s] - b[s]) / abs(a[s]) for s in steps)
    if d <= TOLERANCE:
        print("%-60s max_rel_loss_diff %.3e" % (what, d))
        return 0
    print("FAIL %-55s max_rel_loss_diff %.3e" % (what, d))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
