#!/usr/bin/env bash
# The GPU rows of docs/performance.md (issue 51), in one call on a machine with a CUDA device.
#
#   bash benchmarks/device_rows.sh [OUT_DIR]          (from the checkout root; OUT_DIR default $OUT or runs/device_rows)
#
# 1. the device and the software (nvidia-smi, torch);
# 2. benchmarks/bench_tensor.py on the device: the engine at 16,384 and 131,072 games, rollouts against
#    simple at 16,384 tables, and the whole PPO learner (tensor path on the device; host learner beside it);
# 3. the learning curve (python -m training.curve: standard rules, +1/-1/0 a hand, from random weights,
#    2,000 fresh mirrored hands against simple, seed 900001) on the device for $MINUTES minutes at $TABLES
#    tables: a row at each of $MILESTONES (millions of decisions) reached, and one where the time ran out.
#
# Settings by environment: DEVICE (cuda), MINUTES (4), TABLES (2048), MILESTONES ("10"), ENVS ("16384 131072"), BENCH_TABLES
# (16384), MEASURE_SECONDS (3, per measurement), REPEATS (3), WORKERS (8, the evaluation's processes),
# PYTHON (python3). A smoke test on a CPU (about 4 minutes): DEVICE=cpu ENVS=256 BENCH_TABLES=64 TABLES=64
# MINUTES=0.1 MILESTONES="0.01 1" MEASURE_SECONDS=0.3 REPEATS=1 WORKERS=1 PYTHON=python bash benchmarks/device_rows.sh /tmp/rows.
# Python packages the machine lacks (gymnasium, pettingzoo, farama-notifications on a torch-only image) can
# lie as wheels in .whl/ (docs/performance.md, "GPU rows"); they are installed into /tmp/site first.
# OUT_DIR gets device.txt, bench_tensor.txt, curve.txt, curve.csv, curve.png, progress.csv and one
# milestone_<decisions>.pt per row (at most eight files in all with the default MILESTONES and MINUTES: a lent
# device returns no more); the curve's run itself lies in TRAIN_DIR, by default a fresh folder under /tmp.
set -euo pipefail
out=${1:-${OUT:-runs/device_rows}}
device=${DEVICE:-cuda}
minutes=${MINUTES:-4}
envs=${ENVS:-16384 131072}
bench_tables=${BENCH_TABLES:-16384}
tables=${TABLES:-2048}
milestones=${MILESTONES:-10}
seconds=${MEASURE_SECONDS:-3}
repeats=${REPEATS:-3}
workers=${WORKERS:-8}
python=${PYTHON:-python3}
# The device first: one that torch cannot use here is refused before any file or folder is made.
if ! "$python" -c "import sys, torch; torch.zeros(1, device=sys.argv[1])" "$device" 2> /dev/null; then
    echo "device_rows.sh: error: DEVICE=$device is not a torch device usable here (torch cannot allocate on it)" >&2
    exit 2
fi
train_dir=${TRAIN_DIR:-$(mktemp -d /tmp/okgin_device_train.XXXXXX)/curve}  # outside OUT_DIR: a lent device returns at most 8 files
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G ".whl/*.whl" > /dev/null; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi

{
    date -u
    git log -1 --format='commit %H' 2>/dev/null || true
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
    "$python" -c "import torch, numpy; print('torch', torch.__version__, 'numpy', numpy.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
} 2>&1 | tee "$out/device.txt"

"$python" benchmarks/bench_tensor.py --device "$device" --envs $envs --rollout --tables "$bench_tables" \
    --ppo --ppo-tensor-tables "$bench_tables" --seconds "$seconds" --repeats "$repeats" 2>&1 | tee "$out/bench_tensor.txt"

# The learning curve's command (its settings, deals and measurement) with a time limit: one row where
# the minutes run out, or a row at each milestone reached before.
"$python" -m training.curve --device "$device" --num-tables "$tables" --minutes "$minutes" \
    --milestones "$milestones" --workers "$workers" --run-dir "$train_dir" 2>&1 | tee "$out/curve.txt"
cp "$train_dir/curve.csv" "$train_dir/curve.png" "$train_dir/train/progress.csv" "$train_dir"/milestone_*.pt "$out/"
