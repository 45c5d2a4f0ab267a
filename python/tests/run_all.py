"""run_all.py - the Python bridge's tests (python/tests/test_remat_torch*.py) with stdlib unittest, and a
closing line. (test_record.py, remat_torch.record's tests, runs under Bazel: tests/torch_record_test.sh.)

    /usr/bin/python3 python/tests/run_all.py        (tools/python_test.sh sets the environment)

Exit 0 when every test passed (skips allowed only where SpikingJelly is absent, each listed with
its reason), 1 otherwise.
"""
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    t0 = time.time()
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_remat_torch*.py", top_level_dir=HERE)
    res = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    for test, why in res.skipped:
        print("skipped: %s: %s" % (test.id(), why))
    n_bad = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    print("python bridge tests: %d run, %d passed, %d failed, %d skipped (%.0f s)"
          % (res.testsRun, res.testsRun - n_bad - len(res.skipped), n_bad, len(res.skipped), time.time() - t0))
    return 0 if n_bad == 0 and res.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
