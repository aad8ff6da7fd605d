"""Plot a run's win rate against training time: ``python -m training.plot runs/ppo``."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path


def plot_progress(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write ``learning_curve.png`` (win rate vs simple and random over wall time) and return its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    with open(run_dir / "progress.csv", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("win_rate_vs_simple") and row.get("win_rate_vs_random")]
    out = Path(out) if out else run_dir / "learning_curve.png"
    figure, axis = plt.subplots(figsize=(7, 4))
    minutes = [float(row["elapsed_s"]) / 60 for row in rows]
    for key, label in (("win_rate_vs_simple", "vs simple"), ("win_rate_vs_random", "vs random")):
        axis.plot(minutes, [float(row[key]) for row in rows], marker="o", markersize=3, label=label)
    axis.axhline(0.5, color="grey", linewidth=0.8, linestyle=":")
    axis.axhline(0.6, color="tab:red", linewidth=0.8, linestyle="--", label="target vs simple (60%)")
    axis.set_xlabel("training wall time (minutes, 2-core machine)")
    axis.set_ylabel("match win rate (greedy policy)")
    axis.set_ylim(0, 1.02)
    axis.set_title("okgin PPO: periodic evaluation over full matches")
    axis.legend(loc="lower right")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run_dir", help="a training run directory (with progress.csv)")
    parser.add_argument("--out", default=None, help="PNG path (default: RUN_DIR/learning_curve.png)")
    args = parser.parse_args()
    print(plot_progress(args.run_dir, args.out))


if __name__ == "__main__":
    main()
