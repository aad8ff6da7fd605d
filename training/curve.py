"""The learning-curve benchmark: a hand player trained from scratch, measured at fixed budgets.

``python -m training.curve --run-dir runs/curve`` trains one PPO run (``training.train``) under
the ``standard`` preset (plain gin, knock at 10) against ``simple`` alone, one hand per episode
paying +1 won, -1 lost, 0 drawn, with ``training.train``'s default network (``--network suits``; ``mlp`` the other),
from random weights (``--bc-updates N``: its first N updates
imitate ``simple`` instead, a warm start stated in every output). At each milestone (by default
0.5, 1, 2, 5, 10, 20 and 35 million learner decisions) it stops training, measures the greedy
policy on ``--hands`` fresh single hands against ``simple`` (mirrored deals, each from both
seats; seed ``--eval-seed``, which training never uses; a 95% Wilson interval; a drawn hand is
not won), then trains on. ``--minutes`` also bounds the training's wall time: where it runs out, the policy
reached is measured as the last row (how a lent GPU's minutes are spent: benchmarks/device_rows.sh).

**Outputs** in ``--run-dir``: ``config.json`` (the curve's settings), ``curve.csv`` (one row per milestone: decisions, hands, hands won,
win rate and its interval, training wall time, evaluation time), ``curve.png`` (our points with
their intervals beside the JAX PPO peer's published points) and the training run's own files in
``train/`` (``last.pt``, ``progress.csv`` with the PPO diagnostics and behaviour per update,
``tensorboard/``), and ``milestone_<decisions>.pt`` for each measured policy.

**Resuming**: ``--resume`` continues where a stopped run left off (training from ``last.pt``,
the milestones already measured kept); SIGINT/SIGTERM stop it cleanly (exit 130/143) with the
command to continue printed. Re-running ``--resume`` with a larger ``--milestones`` list extends it
(and ``--minutes`` and ``--workers`` may change); any other setting that differs from the curve's
``config.json`` is refused by name, so that one curve holds rows of one measurement. Every setting
is checked before anything is written.
"""

from __future__ import annotations

import csv
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .cli import MAX_SEED, Command, check_settings, make_run_dir, setting
from .manifest import check_manifest, write_manifest
from .model import NETWORKS
from .train import Hyperparameters, TrainConfig

PROG = "python -m training.curve"

# The peer: a public JAX PPO on OpenSpiel's gin (knock card 10) against its port of OpenSpiel's
# simple bot, per-update training win rate (draws not won), as its README reports them. Its env
# hands the agent the stock draw's chance node, so its agent picks the card it draws
# (benchmarks/peer_env_check.py): the points are drawn for reference, not as a like-for-like rate.
PEER_POINTS = ((0.5e6, 0.003), (5e6, 0.14), (10e6, 0.65), (20e6, 0.77), (35e6, 0.80))
PEER_LABEL = "JAX PPO vs its Simple port (published; its agent picks its stock cards)"
CSV_FIELDS = ["decisions", "hands", "hands_won", "win_rate", "ci_low", "ci_high", "train_wall_s", "eval_wall_s",
              "policy"]


@dataclass(frozen=True)
class CurveConfig:
    """The curve's settings (the training settings not named here are ``training.train``'s defaults)."""

    milestones: str = setting("0.5 1 2 5 10 20 35", "millions of learner decisions at which the policy is measured, "
                              "ascending, separated by spaces (a resume may add more)", budget=True)
    hands: int = setting(2000, "single hands per measurement (mirrored: rounded up to an even number)", low=2)
    eval_seed: int = setting(900_001, "seed of the measurement's deals (no training run uses it)", low=0)
    seed: int = setting(1, "training seed", low=0, high=MAX_SEED)
    bc_updates: int = setting(0, "first updates imitate simple (a warm start; 0: from random weights, as the JAX "
                              "peer starts)", low=0)
    num_tables: int = setting(512, "games stepped together", low=1)
    device: str = setting("cpu", "the tensor engine on this torch device, or empty: the numpy engine on the host",
                          choices=("", "auto", "cpu", "cuda"))
    minutes: float = setting(0.0, "also stop training after this many minutes (over every resume) and measure the "
                             "policy where it stopped, as the last row (0: no time limit)", low=0.0, budget=True)
    workers: int = setting(1, "processes for each measurement (okgin_env.evaluate's workers)", low=1, runtime=True)
    network: str = setting(TrainConfig.network, "the policy network (training.model; a curve begun before "
                           "2026-12-07, when training.train had no --network, trained the mlp: resume it with "
                           "--network mlp)", choices=tuple(NETWORKS))
    hyper: Hyperparameters = setting(Hyperparameters(), "PPO's constants (from Python, as training.train's; the "
                                     "measured curves used the defaults)")


def milestones_of(config: CurveConfig) -> list[int]:
    """The milestones in decisions; a ``ValueError`` naming the bad entry."""
    values = []
    for word in config.milestones.split():
        try:
            value = float(word)
        except ValueError:
            raise ValueError(f"--milestones {word!r} is not a number; give millions of decisions, e.g. '0.5 1 2'") from None
        if not 1e-6 <= value <= 1e4:  # (NaN fails too)
            raise ValueError(f"--milestones {word!r}: each must be at least 0.000001 (one decision) and at most 10000 "
                             "(millions)")
        values.append(round(value * 1e6))
    if not values or values != sorted(set(values)):
        raise ValueError(f"--milestones {config.milestones!r}: give one or more ascending values")
    return values


def train_config(config: CurveConfig, decisions: int):
    """The ``training.train`` settings of the curve's run, trained up to ``decisions``."""
    return TrainConfig(seed=config.seed, network=config.network, rules="standard", total_decisions=decisions,
                       num_tables=config.num_tables, bc_updates=config.bc_updates, opponent_pool="simple",
                       device=config.device, episode="round", round_reward="win", eval_every=10**9, eval_matches=20,
                       minutes=config.minutes, hyper=config.hyper)


def measure(policy_path: Path, hands: int, seed: int, workers: int = 1) -> dict[str, float]:
    """The greedy policy's single hands against ``simple``: hands, won, rate and 95% Wilson interval."""
    from okgin_env.evaluate import evaluate

    from .policy import load_policy

    pair = evaluate({"policy": load_policy(policy_path, rules="standard"), "simple": "simple"}, matches=hands,
                    episode="round", rules="standard", seed=seed, workers=workers,
                    progress=False).pairs[0]
    return {"hands": pair.rounds, "hands_won": pair.rounds_won_a, "win_rate": pair.round_win_rate_a,
            "ci_low": pair.round_ci_low, "ci_high": pair.round_ci_high}


def read_rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def plot_curve(rows: list[dict[str, str]], out: Path, warm_start: str) -> Path:
    """``curve.png``: our measured points with their intervals beside the peer's published ones."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7.5, 4.2))
    if rows:
        x = [int(row["decisions"]) / 1e6 for row in rows]
        y = [float(row["win_rate"]) for row in rows]
        below = [rate - float(row["ci_low"]) for rate, row in zip(y, rows)]
        above = [float(row["ci_high"]) - rate for rate, row in zip(y, rows)]
        axis.errorbar(x, y, yerr=[below, above], marker="o", capsize=3,
                      label=f"okgin PPO vs simple, greedy, fresh mirrored hands ({warm_start})")
    axis.plot([d / 1e6 for d, _ in PEER_POINTS], [r for _, r in PEER_POINTS], marker="s", linestyle="--",
              color="tab:grey", label=PEER_LABEL)
    axis.axhline(0.8, color="tab:red", linewidth=0.8, linestyle=":", label="target 80%")
    axis.set_xscale("log")
    axis.set_xlabel("learner decisions (millions)")
    axis.set_ylabel("single hands won")
    axis.set_ylim(0, 1)
    axis.set_title("Standard gin, single hands against simple")
    axis.legend(loc="lower right", fontsize=8)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out


def _measure_milestone(config: CurveConfig, root: Path, summary: dict, csv_path: Path) -> dict[str, str]:
    """Keep the training's ``last.pt`` as ``milestone_<decisions>.pt``, measure it, append its row
    to ``curve.csv`` and print it; the row as ``read_rows`` gives it."""
    decisions = summary["decisions"]
    kept = root / f"milestone_{decisions}.pt"
    shutil.copyfile(root / "train" / "last.pt", kept)
    began = time.time()
    result = measure(kept, config.hands, config.eval_seed, config.workers)
    row = {"decisions": decisions, **result, "train_wall_s": summary["elapsed_s"],
           "eval_wall_s": round(time.time() - began, 1), "policy": kept.name}
    with open(csv_path, "a", newline="") as handle:
        csv.DictWriter(handle, CSV_FIELDS).writerow(row)
    print(f"{decisions / 1e6:.2f}M decisions: {100 * result['win_rate']:.1f}% "
          f"[{100 * result['ci_low']:.1f}, {100 * result['ci_high']:.1f}] of {result['hands']} hands won "
          f"(training {summary['elapsed_s'] / 60:.1f} min)", flush=True)
    return {key: str(value) for key, value in row.items()}


def run_curve(config: CurveConfig, run_dir: str | Path, resume: bool = False, progress_bar: bool = False,
              command: str | None = PROG) -> dict:
    """Train and measure to every milestone (see the module docstring); ``{"rows": ..., "stopped_by": ...}``."""
    from .train import check_config, run

    milestones = milestones_of(config)
    training = train_config(config, milestones[-1])
    check_settings(training)
    check_config(training)  # (a device torch cannot find, say) refused before anything is written
    root = make_run_dir(run_dir)
    csv_path, train_dir = root / "curve.csv", root / "train"
    if not resume and (csv_path.exists() or train_dir.exists()):
        raise ValueError(f"--run-dir {root} already holds a curve; continue it with --resume or give another folder")
    if resume:  # rows measured on other hands or deals would not belong on one curve
        check_manifest(root, config)
    write_manifest(root, config)
    warm_start = f"warm start: {config.bc_updates} updates imitating simple" if config.bc_updates else "no warm start"
    rows = read_rows(csv_path)
    if not csv_path.exists():
        with open(csv_path, "w", newline="") as handle:
            csv.DictWriter(handle, CSV_FIELDS).writeheader()
    print(f"learning curve in {root}: standard rules, simple, +1/-1/0 a hand, {warm_start}; milestones "
          f"{', '.join(f'{m / 1e6:g}M' for m in milestones)}", flush=True)
    stopped = None
    for milestone in milestones:
        summary = run(train_config(config, milestone), train_dir, resume=True, progress_bar=progress_bar, command=None)
        stopped = summary["stopped_by"]
        if stopped:
            break
        decisions = summary["decisions"]  # whole updates: at or just past the milestone
        if not any(int(row["decisions"]) >= min(milestone, decisions) for row in rows):  # else measured before a stop
            rows.append(_measure_milestone(config, root, summary, csv_path))
            plot_curve(rows, root / "curve.png", warm_start)
        if decisions < milestone:  # --minutes ended the training first: its policy is the last row
            print(f"--minutes {config.minutes:g} reached before the {milestone / 1e6:g}M milestone", flush=True)
            break
    plot_curve(rows, root / "curve.png", warm_start)
    if stopped and command:
        print(f"stopped by {stopped}; continue with:\n  {command} --resume", file=sys.stderr, flush=True)
    return {"rows": rows, "stopped_by": stopped}


# SIGTERM in a measurement stops the curve as Ctrl-C does (the training handles its own)
COMMAND = Command(PROG, __doc__, CurveConfig, run_curve, run_dir="runs/curve", sigterm=True,
                  says_how_to_resume=True)
cli = COMMAND.cli


__all__ = ["CSV_FIELDS", "CurveConfig", "PEER_POINTS", "cli", "measure", "milestones_of", "plot_curve", "run_curve"]

if __name__ == "__main__":
    sys.exit(cli())
