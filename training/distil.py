"""Distil a teacher bot into a trained policy: ``python -m training.distil --init-from CHECKPOINT``.

Read top to bottom: arguments, labelling (worker processes), then fitting and evaluation, which
are ``training.improve``'s (``--objective imitate`` on the labels written here).

Method (why): the search bot (``okgin_env.bots.search``) plays better than the policies trained
so far at every table, but takes 50-250 ms a decision; a network that plays its moves would take
a millisecond. This is the first half of expert iteration (Anthony et al., 2017):

1. **Labelling.** The policy (greedy) plays full matches against ``simple``, its seat rotating
   from match to match, as in ``training.improve``. At each of its decisions with a choice the
   *teacher* (``--teacher``, a bot spec, by default the search bot) is shown the same observation
   and says what it would play. The states come from the student's own play (as in DAgger), so
   the teacher corrects the mistakes the student actually makes; the teacher sees only the
   observation, like the student. Each decision is stored with the network's inputs and, in
   ``q``, a one-hot row marking the teacher's action among the legal ones (the label format of
   ``training.improve``, so its fitting, resuming and Ray path serve both).
2. **Fitting** from the starting weights: cross-entropy towards the teacher's action
   (``training.improve --objective imitate --reuse-labels``). On held-out decisions it reports
   how often the policy agrees with the teacher (``validation_best_action_agreement``, and its
   change from the start as ``validation_gain_points``).
3. **Evaluation**: the starting and the fitted policy on the same mirrored matches against
   ``simple`` (``training.improve``'s ``summary.json``).

The teacher must be reproducible for its seed (a ``rollouts`` budget, not a ``time_limit``), so
that the same arguments give the same labels and ``--resume`` can trust the chunks it finds.
The held-out bots (``okgin_env.bots.HELD_OUT_BOTS``) are refused: no training stage plays them.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from okgin_env.bots import SimpleBot
from okgin_env.players import make_player

from .cli import parse_dataclass_args
from .features import MAX_LEGAL_ACTIONS
from .improve import checkpoint_identity, chunk_sizes, held_out_chunks, label_chunks
from .league import check_training_player
from .labelling import checkpoint_file, labelling_config, play_learner_matches, record_inputs
from .policy import load_checkpoint, load_policy
from .workers import require_ray

PROG = "python -m training.distil"
VALIDATION_FRACTION = 0.05  # training.improve's default share of held-out decisions (or chunks)


@dataclass
class Args:
    init_from: str = field(default="checkpoints/okgin_classic.pt", metadata={"help": "the policy to train (the student)"})
    teacher: str = field(default="search", metadata={
        "help": "the bot whose moves are learned, as an okgin-eval spec (search, search:rollouts=160, ...); "
                "it must be reproducible: no time_limit"})
    seed: int = field(default=1, metadata={"help": "seed for the deals, the bots and the fit"})
    decisions: int = field(default=40_000, metadata={"help": "decisions labelled by the teacher (all workers)"})
    workers: int = field(default=2, metadata={"help": "labelling processes"})
    ray_address: str = field(default="", metadata={"help": "label on this Ray cluster (see training.workers); empty: local processes"})
    chunk: int = field(default=500, metadata={"help": "decisions per labelling job (each has its own seed and file)"})
    epochs: int = field(default=4, metadata={"help": "passes over the labelled decisions"})
    learning_rate: float = field(default=1e-4, metadata={"help": "Adam learning rate"})
    eval_matches: int = field(default=1000, metadata={"help": "matches against simple for each of start and fitted"})
    validation_split: str = field(default="jobs", metadata={
        "choices": ("jobs", "decisions"),
        "help": "held-out decisions for the fit's report: whole label chunks (other matches) or random decisions"})
    run_dir: str = field(default="runs/distil", metadata={"help": "labels, fitted.pt, summary.json"})
    resume: bool = field(default=False, metadata={
        "help": "keep the label chunks an interrupted run of the same arguments wrote and label only the rest"})
    progress: bool = field(default=True, metadata={"help": "show progress bars"})


def parse_args(argv: list[str] | None = None) -> Args:
    args = parse_dataclass_args(Args, argv, __doc__.splitlines()[0])
    for name in ("decisions", "workers", "chunk"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    # Checked now, not after hours of teacher labelling.
    if args.epochs < 0 or args.eval_matches < 0 or not args.learning_rate > 0:
        raise ValueError(f"need --epochs >= 0, --eval-matches >= 0 and --learning-rate > 0; got {args.epochs}, "
                         f"{args.eval_matches} and {args.learning_rate}")
    if args.validation_split == "jobs":
        held_out_chunks(len(chunk_sizes(args.decisions, args.chunk)), VALIDATION_FRACTION)
    return args


# ----------------------------------------------------------------------------- labelling (worker processes)


def label_with_teacher(job: tuple[str, str, str, int, int]) -> dict[str, np.ndarray]:
    """One worker: the student plays matches against ``simple``; the teacher labels ``count`` decisions.

    ``job`` = (checkpoint, rules, teacher spec, seed, count). The teacher and ``simple`` are
    seeded from ``seed``, and match ``k`` is dealt from ``[seed, k]``: the same job gives the same
    arrays. ``q`` is 1 for the teacher's action (in the row order of ``encode_decision``), else 0.
    """
    checkpoint, rules, teacher_spec, seed, count = job
    torch.set_num_threads(1)
    path = checkpoint_file(checkpoint)
    config = labelling_config(path, rules)
    student = load_policy(path, rules=config)
    teacher = make_player(teacher_spec, seed=seed, rules=config)
    opponent = SimpleBot(seed=random.Random(seed).getrandbits(32))
    records: dict[str, list] = {k: [] for k in ("obs", "ctx", "feat", "ids", "legal", "q")}

    def label(match, learner: int, observation: dict[str, np.ndarray], encoded: tuple) -> None:
        actions = encoded[-1]
        choice = int(teacher.act(observation))
        if choice not in actions:
            raise RuntimeError(f"teacher {teacher_spec!r} played {choice}, not a legal action {actions}")
        q = np.zeros(MAX_LEGAL_ACTIONS, dtype=np.float32)
        q[actions.index(choice)] = 1.0
        record_inputs(records, observation, encoded)
        records["q"].append(q)

    play_learner_matches(config, student, opponent, seed, count, label)
    return {k: np.stack(v) for k, v in records.items()}


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.ray_address:
        require_ray(args.ray_address)  # before anything is written
    run_dir = Path(args.run_dir)
    start = load_checkpoint(args.init_from)  # validated before anything is built from it
    rules = start["metadata"]["rules"]
    check_training_player(args.teacher, "--teacher", labelling_config(args.init_from, rules))  # a bad teacher fails now
    run_dir.mkdir(parents=True, exist_ok=True)

    manifest = {"init_from": checkpoint_identity(args.init_from), "rules": rules, "teacher": args.teacher,
                "seed": args.seed, "sizes": chunk_sizes(args.decisions, args.chunk)}
    _, labelling_seconds = label_chunks(
        run_dir, manifest, args.init_from, label_with_teacher,
        lambda checkpoint, k, size: (checkpoint, rules, args.teacher, args.seed * 100_000 + k, size),
        resume=args.resume, workers=args.workers, ray_address=args.ray_address, progress=args.progress,
        desc=f"teacher labels ({args.chunk} decisions a job)")

    from . import improve

    summary = improve.main([
        "--init-from", args.init_from, "--run-dir", str(run_dir), "--reuse-labels", "--objective", "imitate",
        "--seed", str(args.seed), "--epochs", str(args.epochs), "--learning-rate", str(args.learning_rate),
        "--eval-matches", str(args.eval_matches), "--decisions", str(args.decisions), "--workers", str(args.workers),
        "--validation-split", args.validation_split, "--validation-fraction", str(VALIDATION_FRACTION),
        *([] if args.progress else ["--no-progress"])])
    summary["teacher"] = args.teacher
    summary["labelling_seconds"] = round(labelling_seconds, 1)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def cli(argv: list[str] | None = None) -> int:
    """``python -m training.distil``: exit 2 with a message on bad input."""
    try:
        main(argv)
    except (ValueError, ImportError, FileNotFoundError) as error:  # ImportError: --ray-address without Ray
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(cli())
