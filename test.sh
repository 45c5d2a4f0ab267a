#!/usr/bin/env bash
# test.sh - every test: the normal build, `remat --backend cuda` on the CPU emulator of
# the CUDA backend, data-parallel steps under mpirun (--config=mpi), the normal build again under AddressSanitizer and
# UndefinedBehaviorSanitizer, then a short run of each fuzzer. Exit status
# non-zero when anything fails.
set -uo pipefail
cd "$(dirname "$0")"
status=0
echo "== bazel test //... (optimised build)"
bazel test --test_summary=terse //... || status=1
python3 tools/count_tests.py bazel-testlogs || status=1
echo "== the Python bridge (python/remat_torch) on Debian's torch, against the optimised remat"
bash tools/python_test.sh 2>&1 | tee "${TMPDIR:-/tmp}/remat_python_test.log"; [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "== remat --backend cuda end to end on the CPU emulator of the CUDA backend (--config=cudaemu)"
bazel test --config=cudaemu --test_summary=terse --test_output=all //tests:cuda_cli_test || status=1
echo "== data-parallel steps under mpirun (--config=mpi, then with the CUDA emulator; oversubscribed, root allowed)"
bazel build --config=mpi //tools:remat && bash tests/mpi_test.sh bazel-bin/tools/remat || status=1
bazel build --config=mpi --config=cudaemu //tools:remat && MPI_TEST_CUDA_ONLY=1 bash tests/mpi_test.sh bazel-bin/tools/remat || status=1
echo "== bazel test //... under ASan + UBSan"
bazel test --config=asan --test_summary=terse //... || status=1
python3 tools/count_tests.py bazel-asan-testlogs || status=1   # the asan config's own folder (.bazelrc)
echo "== fuzzers (libFuzzer + ASan + UBSan), 15 s each; the seed is printed for replay"
sh fuzz/run.sh 15 || status=1
if [ "$status" -eq 0 ]; then echo "all test targets and fuzzers passed"; else echo "some test targets or fuzzers FAILED"; fi
# the closing lines: the Python bridge's count, then the GoogleTest cases of the sanitizer run (the same cases as the
# first run)
grep -h "^python bridge tests:" "${TMPDIR:-/tmp}/remat_python_test.log" 2>/dev/null
python3 tools/count_tests.py bazel-asan-testlogs
exit $status
