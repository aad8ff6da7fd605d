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


PLOTTED = ("elapsed_s", "win_rate_vs_simple", "win_rate_vs_random")


def evaluation_rows(run_dir: str | Path) -> list[dict[str, float]]:
    """The rows of ``progress.csv`` that carry an evaluation, as the numbers plotted; a
    ``ValueError`` naming the file and its line where one cannot be read."""
    path = Path(run_dir) / "progress.csv"
    rows = []
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for line, row in enumerate(csv.DictReader(handle), start=2):
                if not (row.get("win_rate_vs_simple") and row.get("win_rate_vs_random")):
                    continue
                try:
                    rows.append({key: float(row[key]) for key in PLOTTED})
                except (KeyError, TypeError, ValueError):
                    raise ValueError(f"{path} line {line}: expected numbers in {', '.join(PLOTTED)}") from None
    except (UnicodeDecodeError, csv.Error) as error:
        raise ValueError(f"{path} is not a readable CSV file ({type(error).__name__})") from None
    return rows


def plot_progress(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write ``learning_curve.png`` (win rate vs simple and random over wall time) and return its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    rows = evaluation_rows(run_dir)
    out = Path(out) if out else run_dir / "learning_curve.png"
    figure, axis = plt.subplots(figsize=(7, 4))
    minutes = [row["elapsed_s"] / 60 for row in rows]
    for key, label in (("win_rate_vs_simple", "vs simple"), ("win_rate_vs_random", "vs random")):
        axis.plot(minutes, [row[key] for row in rows], marker="o", markersize=3, label=label)
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
    parser.add_argument("--out", default=None, help="PNG path, in a folder that exists (default: "
                        "RUN_DIR/learning_curve.png)")
    args = parser.parse_args(argv)
    if not (Path(args.run_dir) / "progress.csv").is_file():
        print(f"{parser.prog}: error: {Path(args.run_dir) / 'progress.csv'} does not exist "
              "(give the --run-dir of python -m training.train)", file=sys.stderr)
        return 2
    if args.out is not None and (Path(args.out).suffix.lower() != ".png" or not Path(args.out).parent.is_dir()
                                 or Path(args.out).is_dir()):
        print(f"{parser.prog}: error: --out {args.out!r}: give a file ending in .png in a folder that exists",
              file=sys.stderr)
        return 2
    try:
        rows = evaluation_rows(args.run_dir)
    except ValueError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    if not rows:
        print(f"{parser.prog}: no evaluation in {Path(args.run_dir) / 'progress.csv'} yet "
              "(they start after imitation, every --eval-every updates)", file=sys.stderr)
        return 1
    try:
        print(plot_progress(args.run_dir, args.out))
    except OSError as error:  # a folder not writable, a full disk
        print(f"{parser.prog}: error: cannot write {args.out or 'the plot'}: {error.strerror or error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
