"""Plot a training run's learning curve: ``python -m training.plot RUN_DIR [--out PNG]``.

Reads ``RUN_DIR/progress.csv`` (written by ``python -m training.train``, one row per update) and
draws the win rate of the greedy policy against ``simple`` and against ``random`` at each
evaluation, over training wall time, into ``RUN_DIR/learning_curve.png`` (or ``--out``). Training
draws it at the end of a run; this command redraws it at any time, also while the run goes on.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path


def evaluation_rows(run_dir: str | Path) -> list[dict[str, str]]:
    """The rows of ``progress.csv`` that carry an evaluation."""
    with open(Path(run_dir) / "progress.csv", newline="") as handle:
        return [row for row in csv.DictReader(handle) if row.get("win_rate_vs_simple") and row.get("win_rate_vs_random")]


def plot_progress(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write ``learning_curve.png`` (win rate vs simple and random over wall time) and return its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    rows = evaluation_rows(run_dir)
    out = Path(out) if out else run_dir / "learning_curve.png"
    figure, axis = plt.subplots(figsize=(7, 4))
    minutes = [float(row["elapsed_s"]) / 60 for row in rows]
    for key, label in (("win_rate_vs_simple", "vs simple"), ("win_rate_vs_random", "vs random")):
        axis.plot(minutes, [float(row[key]) for row in rows], marker="o", markersize=3, label=label)
    axis.axhline(0.5, color="grey", linewidth=0.8, linestyle=":")
    axis.axhline(0.6, color="tab:red", linewidth=0.8, linestyle="--", label="target vs simple (60%)")
    axis.set_xlabel("training wall time (minutes)")
    axis.set_ylabel("match win rate (greedy policy)")
    axis.set_ylim(0, 1.02)
    axis.set_title("okgin PPO: periodic evaluation over full matches")
    axis.legend(loc="lower right")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.plot", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a training run directory (with progress.csv)")
    parser.add_argument("--out", default=None, help="PNG path (default: RUN_DIR/learning_curve.png)")
    args = parser.parse_args(argv)
    if not (Path(args.run_dir) / "progress.csv").is_file():
        print(f"{parser.prog}: error: {Path(args.run_dir) / 'progress.csv'} does not exist "
              "(give the --run-dir of python -m training.train)", file=sys.stderr)
        return 2
    if not evaluation_rows(args.run_dir):
        print(f"{parser.prog}: no evaluation in {Path(args.run_dir) / 'progress.csv'} yet "
              "(they start after imitation, every --eval-every updates)", file=sys.stderr)
        return 1
    print(plot_progress(args.run_dir, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
