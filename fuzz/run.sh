#!/bin/sh
# fuzz/run.sh - build the model, plan, notation (plan notation + sizes), trace, pickle, plot (gnuplot script
# strings) and record (a recorded PyTorch step, its plan simulator and --N check) fuzzers with clang (libFuzzer +
# ASan + UBSan, not Bazel) and run each for a while.
#
#   fuzz/run.sh [SECONDS] [SEED]
#
# SECONDS per fuzzer (default 20). SEED is passed as -seed=SEED (default: derived
# from the clock); it is printed so a failure can be replayed with the same seed.
# The seed corpus is data/models and data/plans (read only) for the JSON readers and
# fuzz/seeds/trace for the HDF5 trace reader, fuzz/seeds/pickle for the pickle reader
# and the PyTorch snapshot importer, fuzz/seeds/record for a recorded PyTorch step; new inputs go to
# $FUZZ_WORK (default /tmp/remat-fuzz), crashes to $FUZZ_WORK/crash-*.
# Exit status: 0 when every fuzzer ran clean, 1 otherwise.
set -eu

secs=${1:-20}
seed=${2:-$(( $(date +%s) % 2147483647 ))}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${FUZZ_WORK:-/tmp/remat-fuzz}
cc=${CC_FUZZ:-clang}

case $secs in ''|*[!0-9]*) echo "fuzz/run.sh: SECONDS: expected a whole number, got '$secs'" >&2; exit 2;; esac
case $seed in ''|*[!0-9]*) echo "fuzz/run.sh: SEED: expected a whole number, got '$seed'" >&2; exit 2;; esac

mkdir -p "$work"
cd "$root"
srcs="core/base/size.c core/base/status.c core/base/grow.c core/base/types.c core/io/file_kind.c core/io/input_file.c core/io/json_util.c core/io/json_strict.c core/io/json_write.c core/model/layers.c core/model/model_json.c core/model/plan_json.c core/model/plan_notation.c core/model/plan_grid.c"
trace_srcs="core/base/clock.c core/base/status.c core/base/grow.c core/base/types.c core/io/file_kind.c core/io/input_file.c core/io/atomic_file.c core/io/trace.c core/io/trace_h5.c core/io/h5_util.c"
pickle_srcs="core/base/clock.c core/base/size.c core/base/status.c core/base/grow.c core/io/pickle.c core/io/ext_trace.c core/io/ext_record.c core/io/torch_snapshot.c core/io/input_file.c core/alloc/caching_config.c core/io/h5_util.c core/io/file_kind.c core/io/atomic_file.c core/base/types.c"
flags="-std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -I."
for t in model plan notation; do
    $cc $flags -o "$work/fuzz_$t" "fuzz/fuzz_$t.c" $srcs -lcjson -lm
done
$cc $flags -I/usr/include/hdf5/serial -o "$work/fuzz_trace" fuzz/fuzz_trace.c $trace_srcs \
    -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5_serial -lm
# (ext_trace.c frees the optional /record group of ext_record.c, whose header names HDF5 types)
$cc $flags -I/usr/include/hdf5/serial -o "$work/fuzz_pickle" fuzz/fuzz_pickle.c $pickle_srcs \
    -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5_serial -lm
# the recorded PyTorch step (/record) and what reads it: the plan simulator and the --N check
record_srcs="core/base/clock.c core/base/size.c core/base/status.c core/base/grow.c core/base/types.c core/io/file_kind.c core/io/input_file.c core/io/atomic_file.c core/io/h5_util.c core/io/ext_trace.c core/io/ext_trace_h5.c core/io/ext_record.c core/io/json_util.c core/io/json_strict.c core/io/json_write.c core/model/layers.c core/model/model_json.c core/model/plan_json.c core/model/plan_notation.c core/model/plan_grid.c core/alloc/caching_config.c core/alloc/alloc_model.c sim/torch_sim.c sim/torch_rescale.c"
$cc $flags -I/usr/include/hdf5/serial -o "$work/fuzz_record" fuzz/fuzz_record.c $record_srcs \
    -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5_serial -lcjson -lm
plot_srcs="plots/scaling.c plots/reduce.c plots/pareto.c plots/names.c plots/memplot.c plots/items.c plots/figure.c plots/extplot.c plots/ext_curve.c plots/curve.c plots/breakdown.c core/model/plan_notation.c core/model/plan_json.c core/model/model_json.c core/model/layers.c core/io/trace.c core/io/json_write.c core/io/json_util.c core/io/json_strict.c core/io/input_file.c core/io/file_kind.c core/io/ext_trace.c core/io/ext_record.c core/io/atomic_file.c core/base/types.c core/base/status.c core/base/grow.c core/base/size.c core/base/clock.c core/alloc/caching_config.c core/alloc/alloc_model.c core/io/h5_util.c"
$cc $flags -I/usr/include/hdf5/serial -o "$work/fuzz_plot" fuzz/fuzz_plot.c $plot_srcs \
    -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5_serial -lcjson -lm

echo "fuzz/run.sh: seed=$seed seconds=$secs work=$work"
status=0
fuzz_tmp=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && fuzz_tmp=/dev/shm
for t in model plan notation trace pickle plot record; do
    corpus="$work/corpus_$t"
    extra=""
    if [ "$t" = trace ]; then seeds="fuzz/seeds/trace"; dict=""; maxlen=65536
    elif [ "$t" = pickle ]; then seeds="fuzz/seeds/pickle"; dict=""; maxlen=16384
    elif [ "$t" = notation ]; then seeds="fuzz/seeds/notation"; dict=""; maxlen=512
    elif [ "$t" = plot ]; then seeds="fuzz/seeds/plot"; dict="-dict=fuzz/plot.dict"; maxlen=256
    elif [ "$t" = record ]; then seeds="fuzz/seeds/record"; maxlen=262144
        # remat's allocations are counted by the target itself (remat_xmem_live) and HDF5's are made with
        # LeakSanitizer paused, so its scan after each input could report nothing and took 9 of 10 runs' time
        dict=""; extra="-detect_leaks=0"
    else seeds="data/models data/plans"; dict="-dict=fuzz/json.dict"; maxlen=8192; fi
    mkdir -p "$corpus"
    log="$work/fuzz_$t.log"
    echo "fuzz/run.sh: fuzz_$t: replay with: $work/fuzz_$t -seed=$seed $dict $extra $corpus $seeds"
    # shellcheck disable=SC2086
    # the trace target writes each accepted trace back through the atomic writer,
    # which fsyncs: on tmpfs (/dev/shm) that costs nothing, on a disk it is most of the time
    if TMPDIR="$fuzz_tmp" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$work/fuzz_$t" -seed="$seed" -max_total_time="$secs" $dict $extra -max_len=$maxlen \
            -artifact_prefix="$work/" -print_final_stats=1 \
            "$corpus" $seeds >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
        echo "fuzz/run.sh: fuzz_$t: ok, ${runs:-?} runs in ${secs}s, $cov, corpus $(ls "$corpus" | wc -l) files"
    else
        echo "fuzz/run.sh: fuzz_$t: FAILED (seed=$seed); last lines of $log:" >&2
        tail -n 40 "$log" >&2
        status=1
    fi
done
exit $status
