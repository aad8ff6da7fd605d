"""Benchmark: the cost of one labelled decision of ``training.improve`` (``training.labelling``).

The same jobs (checkpoint, seeds and decision counts) are labelled in this process, on one core
(``torch.set_num_threads(1)``), by ``label_decisions`` with up to ``--rollout-batch`` rollouts
in lockstep, and, for comparison, with one rollout at a time (``rollout_batch=1``: every
learner decision a forward pass of batch 1), interleaved repeat by repeat so that a noisy moment
on a shared machine hurts both alike.

Every timed run starts from empty solver memos (``okgin_env.rules.memo.clear_memos``): the second
run would otherwise find the first one's answers for the very same positions remembered. A
labelling worker keeps its memos from job to job, so this is the pessimistic figure.

It reports the median milliseconds per labelled decision per core (process CPU time by default,
steadier than wall time on a shared machine; ``--clock wall`` for wall time), the ratio, whether
both gave identical label arrays (they must), and how much of one more batched run is spent in
the network's forward passes. ``--json FILE`` writes the numbers.

Usage::

    python benchmarks/bench_labelling.py [--decisions 300] [--repeats 3] [--checkpoint checkpoints/okgin_classic.pt]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from okgin_env.rules.memo import clear_memos  # noqa: E402
from common import count_value, output_path  # noqa: E402
from training.policy import load_checkpoint  # noqa: E402
from training.labelling import DEFAULT_ROLLOUT_BATCH, label_decisions  # noqa: E402
from training.model import NETWORKS  # noqa: E402
from training.symmetry import SuitSymmetricNet  # noqa: E402


def network_share(label, job, clock) -> float:
    """Milliseconds per labelled decision that one more run of ``label`` spends in the network's
    forward passes (timed around the ``forward`` of every network kind and of the suit-symmetric
    wrapper, the outermost call only): the floor that no work on the states' Python side can go below."""
    spent, depth = [0.0], [0]
    classes = {*NETWORKS.values(), SuitSymmetricNet}
    forwards = {cls: cls.forward for cls in classes}

    def timed_forward(forward):
        def timed(self, *inputs):
            depth[0] += 1
            start = clock()
            try:
                return forward(self, *inputs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    spent[0] += clock() - start
        return timed

    for cls, forward in forwards.items():
        cls.forward = timed_forward(forward)
    try:
        label(job)
    finally:
        for cls, forward in forwards.items():
            cls.forward = forward
    return spent[0] * 1000 / job[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "okgin_classic.pt"))
    parser.add_argument("--rules", default="classic")
    parser.add_argument("--decisions", type=count_value(1), default=300, help="labelled decisions per measurement")
    parser.add_argument("--repeats", type=count_value(1), default=3)
    parser.add_argument("--rollout-batch", type=count_value(1), default=DEFAULT_ROLLOUT_BATCH)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--json", type=output_path, default=None, help="also write the results here")
    args = parser.parse_args()
    try:  # the file and the rules it is labelled for, before any measurement
        load_checkpoint(args.checkpoint, rules=args.rules)
    except ValueError as error:  # (a CheckpointError is one)
        parser.error(f"--checkpoint {args.checkpoint} --rules {args.rules}: {error}")
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    paths = {
        "single": lambda job: label_decisions(job, rollout_batch=1),
        "batched": lambda job: label_decisions(job, rollout_batch=args.rollout_batch),
    }
    paths["batched"]((args.checkpoint, args.rules, 0, 2))  # warm-up: imports, first model load
    times: dict[str, list[float]] = {name: [] for name in paths}
    identical = True
    for repeat in range(args.repeats):
        job = (args.checkpoint, args.rules, 1000 + repeat, args.decisions)
        labels = {}
        for name, function in paths.items():
            clear_memos()  # each path starts cold: no solver answer remembered from another path's run of this job
            start = clock()
            labels[name] = function(job)
            times[name].append((clock() - start) * 1000 / args.decisions)
        same = all(np.array_equal(labels["single"][k], labels["batched"][k]) for k in labels["single"])
        identical &= same
        timings = ", ".join(f"{name} {values[-1]:.2f} ms" for name, values in times.items())
        print(f"repeat {repeat + 1}: {timings} per labelled decision; identical labels (single, batched): {same}",
              flush=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    clear_memos()
    network_ms = network_share(paths["batched"], (args.checkpoint, args.rules, 1000, args.decisions), clock)
    print(f"batched path, one more run: {network_ms:.2f} ms per labelled decision in the network's forward passes", flush=True)
    result = {
        "benchmark": "labelling",
        "clock": args.clock,
        "checkpoint": os.path.relpath(args.checkpoint, ROOT),
        "rules": args.rules,
        "decisions_per_measurement": args.decisions,
        "repeats": args.repeats,
        "rollout_batch": args.rollout_batch,
        "ms_per_labelled_decision": {name: round(v, 3) for name, v in medians.items()},
        "all_runs_ms": {name: [round(v, 3) for v in values] for name, values in times.items()},
        "speedup": round(medians["single"] / medians["batched"], 2),
        "batched_network_forward_ms": round(network_ms, 3),
        "identical_labels": identical,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f} at the end",
    }
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if not identical:
        sys.exit("the batched labels differ from the one-rollout-at-a-time labels")


if __name__ == "__main__":
    main()
