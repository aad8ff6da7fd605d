"""The shipped policies end to end, in one command: ``python -m training.pipeline``.

Read top to bottom: arguments, the stages, ``main``. Every stage is an existing command run
with the arguments below, in a folder of its own under ``--run-dir`` (default ``runs/pipeline``):

1. ``ppo`` (``training.train``): imitation of ``simple``, then PPO against it (at the penalty
   tables imitation of ``lookahead``, below); its ``best.pt`` (the best evaluation against
   ``simple``) goes on.
2. ``improve1`` (``training.improve``): decisions labelled by rollouts with the PPO policy
   (the first number of ``--steps``), then a regression of its scores onto the labels.
3. ``improve2``, ...: the same from the previous step's policy (or the one ``--step-from``
   names), one stage per number of ``--steps`` (``--steps 0``: none, PPO alone).
4. ``average`` (``training.soup``, only with ``--average``): the uniform weight average of the
   named steps' fitted files.

The last stage's ``fitted.pt`` (PPO alone: its ``best.pt``) is copied to ``RUN_DIR/final.pt``. ``RUN_DIR/pipeline.json`` holds
every finished stage's wall time and results, and each stage's own files stay in its folder
(``progress.csv``, ``summary.json``, TensorBoard logs, label chunks).

**Resuming.** ``--resume`` skips the stages that finished (``RUN_DIR/STAGE/stage.json``) and
resumes the one that was interrupted: PPO from its ``last.pt``, labelling from the label
chunks already written (``training.improve --resume``; the same seeds give the same labels).
The stages' arguments are stored in ``pipeline.json``; resuming with other ones is refused.

**Scaling out.** ``--ray-address`` runs the labelling jobs on a Ray cluster
(``training.workers``); PPO runs here.

The classic default (``CLASSIC_RECIPE``) is PPO for 3M decisions, then three improvement steps
of 800,000 labelled decisions, each later one fitting the labels of the steps before it too
(``--carry-labels 0/1/2``): measured at 81.2 min on two cores with a final policy at about 74%
against ``simple`` (docs/classic_policy.md, "The default recipe: three steps of 800,000"). The
shipped file's own recipe took five steps and about two and a half hours: ``--steps
200000,300000,1000000,1000000,1000000 --carry-labels 0/0/0/1/2``; ``--steps 200000,300000`` is
the short recipe of its first stages (about 27 min, about 61%).
``--quick`` shrinks every budget to a smoke test of a few minutes (the steps given keep their
number, at 40 decisions each; with ``--steps`` not given, two steps and no average).

**The penalty game.** ``--rules penalty --num-players N`` (2-4) runs the first stage for that
table as imitation of the ``lookahead`` bot (``PENALTY_WARM_START``: ``training.train
--bc-teacher lookahead --bc-updates 60 --outlook-features``, 491,520 decisions, the teacher
playing the learner's seat against ``PENALTY_POOL`` in the other seats), its final policy
evaluated on 200 matches; then the improvement steps that made the shipped files
(``PENALTY_RECIPE``). At 2 or 3 players: eight steps of ``PENALTY_STEP_DECISIONS`` (100,000),
each from the one before, then two more from step 8 (100,000 and 300,000 labels), and the final
file is the weight average of steps 7 to 10 (``training.soup``), as the shipped 3-player file is.
At 4 players: six steps, then a seventh of 500,000 labels (the shipped file's step 7 labelled as
many in two runs, 400,000 and 100,000, from the same start). The first step's
rollouts play ``lookahead`` in the learner's seat
(``training.improve --rollout-player lookahead``: each action valued by the teacher's
continuation, so the step improves on the teacher); the later steps' rollouts play the policy
itself, which by then plays better than its teacher. Every step's fit is the all-actions policy
step (``--objective policy``; the regression lost at these tables). Each step labels and
evaluates at the checkpoint's own table (the learner against ``simple`` in every other seat). A
larger ``--ppo-decisions`` adds PPO after the imitation (measured: no better,
see docs/penalty_policies.md).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from okgin_env.rules.config import make_config

from .cli import parse_dataclass_args

PROG = "python -m training.pipeline"
# The penalty recipe per player count (what made the shipped files; 2 players as 3): each further
# step of the policy's own rollouts was kept while it still won more on the selection deals.
PENALTY_STEP_DECISIONS = 100_000


class Recipe(NamedTuple):
    """A table's default ``--steps``, ``--step-from``, ``--average`` and ``--carry-labels``."""

    steps: str
    step_from: str = ""  # empty: every step from the one before
    average: str = ""  # empty: the last step's file is the final one
    carry_labels: str = "0"  # 0: each step fits its own labels alone


# Classic: three equal steps, each fitting every earlier step's labels as well (81.2 min measured
# end to end, inside the 90-minute budget; larger first steps gained more than the shipped file's
# 200,000 and 300,000: docs/classic_policy.md).
CLASSIC_RECIPE = Recipe("800000,800000,800000", carry_labels="0/1/2")


def _steps(*decisions: int) -> str:
    return ",".join(map(str, decisions))


_P = PENALTY_STEP_DECISIONS
PENALTY_RECIPE = {
    # steps 1-8 in a chain, steps 9 and 10 both from step 8; the final file averages steps 7-10
    3: Recipe(_steps(*[_P] * 9, 3 * _P), "/".join(map(str, [*range(9), 8])), "7,8,9,10"),
    4: Recipe(_steps(*[_P] * 6, 5 * _P)),
}
PENALTY_RECIPE[2] = PENALTY_RECIPE[3]  # (never shipped: the 3-player recipe)


def default_recipe(rules: str, num_players: int) -> Recipe:
    """The steps when ``--steps`` is not given: the preset's recipe (the penalty one per player count)."""
    return PENALTY_RECIPE[num_players] if rules == "penalty" else CLASSIC_RECIPE


# The improvement steps' rollout player and fit, per preset (training.improve's own defaults at
# classic, whose stage arguments stay the shipped recipe's): at the penalty tables the first step
# values each action by lookahead's continuation (improving on the teacher the imitation copied),
# the later ones by the policy's own (once it plays better than its teacher), and every step takes
# the conservative all-actions policy step.
STEP_ROLLOUT_PLAYER = {"classic": ("policy", "policy"), "penalty": ("lookahead", "policy")}  # (first step, later ones)
STEP_OBJECTIVE = {"classic": "regress", "penalty": "policy"}
PENALTY_BC_UPDATES = 60  # updates of 128 tables x 64 decisions imitating lookahead
PPO_DECISIONS = {"classic": 3_000_000, "penalty": PENALTY_BC_UPDATES * 128 * 64}  # per preset, when --ppo-decisions is 0
PENALTY_POOL = "simple@3 self@1"
PENALTY_WARM_START = ["--bc-teacher", "lookahead", "--bc-updates", str(PENALTY_BC_UPDATES), "--outlook-features"]
PENALTY_PPO_EVAL_MATCHES = 200  # multi-player matches are longer; the improvement steps evaluate on more


@dataclass
class Args:
    run_dir: str = field(default="runs/pipeline", metadata={"help": "one folder per stage, final.pt and pipeline.json"})
    seed: int = field(default=1, metadata={"help": "seed of the PPO stage; improvement step k uses seed + 9 + k"})
    rules: str = field(default="classic", metadata={"help": "rules preset to train for", "choices": tuple(PPO_DECISIONS)})
    num_players: int = field(default=0, metadata={
        "help": "seats at the table (classic: 2; penalty: 2, 3 or 4); 0: the preset's own count"})
    ppo_decisions: int = field(default=0, metadata={
        "help": "learner decisions of the first stage (imitation, then PPO); 0: the preset's default (classic "
                "3,000,000; penalty 491,520: imitation of lookahead alone)"})
    outlook_features: bool = field(default=False, metadata={
        "help": "the network also reads the next stock draw's outlook per action (training.train --outlook-features); "
                "the improvement steps follow the checkpoint"})
    steps: str = field(default="", metadata={
        "help": "decisions labelled in each improvement step, comma-separated (one stage per number; 0: none); "
                f"empty: the preset's recipe (classic {CLASSIC_RECIPE.steps} with --carry-labels "
                f"{CLASSIC_RECIPE.carry_labels}; penalty: 2 or 3 players "
                f"{PENALTY_RECIPE[3].steps}, 4 players {PENALTY_RECIPE[4].steps}, with its --step-from and --average)"})
    step_from: str = field(default="", metadata={
        "help": "which stage each improvement step starts from, one per step separated by '/': 0 the first "
                "(PPO) stage, k step k's fitted file (an earlier step); empty: each step from the one before "
                "(with --steps empty: the preset's recipe)"})
    average: str = field(default="", metadata={
        "help": "steps whose fitted files are averaged into the final file, comma-separated (training.soup; "
                "two or more); empty: the last step's file (with --steps empty: the preset's recipe)"})
    rollout_player: str = field(default="", metadata={
        "help": "who plays the learner's seat in the improvement steps' labelling rollouts (training.improve "
                "--rollout-player: policy or a bot spec), one for every step or one per step separated by '/' "
                "(e.g. lookahead/policy/policy); empty: the preset's default (classic policy; penalty lookahead for the "
                "first step, policy for the later ones)"})
    objective: str = field(default="", metadata={
        "help": "the improvement steps' fit (training.improve --objective regress|policy); empty: the preset's "
                "default (classic regress, penalty policy)"})
    fit_target: str = field(default="label", metadata={
        "help": "what the improvement steps fit (training.improve --fit-target label|match), one for every step or "
                "one per step separated by '/' (label/match); every shipped step fitted its labels"})
    carry_labels: str = field(default="", metadata={
        "help": "how many earlier steps' labels each improvement step adds to its own fit (training.improve "
                "--extra-labels), the latest first: one number (at most that many for every step) or one per step separated "
                "by '/' (e.g. 0/0/0/1); 0: its own labels alone; empty: the preset's recipe with --steps empty and no --quick "
                f"(classic {CLASSIC_RECIPE.carry_labels}), else 0"})
    label_top: int = field(default=0, metadata={
        "help": "the improvement steps label only the policy's K best-scored actions (training.improve --label-top); "
                "0: every legal action, the shipped recipe"})
    eval_matches: int = field(default=1000, metadata={
        "help": "mirrored matches against simple for the start and the fitted policy of each step"})
    workers: int = field(default=2, metadata={"help": "labelling and evaluation processes (or Ray CPUs with --ray-address local)"})
    ray_address: str = field(default="", metadata={"help": "label on this Ray cluster (see training.workers); empty: local processes"})
    quick: bool = field(default=False, metadata={"help": "tiny budgets everywhere (a smoke test of the whole pipeline)"})
    resume: bool = field(default=False, metadata={"help": "skip finished stages and resume the interrupted one"})
    progress: bool = field(default=True, metadata={"help": "show progress bars"})


QUICK_STEP = "40"  # decisions per improvement step with --quick
QUICK = {"ppo_decisions": 2_048, "steps": f"{QUICK_STEP},{QUICK_STEP}", "eval_matches": 0}


def parse_args(argv: list[str] | None = None) -> Args:
    args = parse_dataclass_args(Args, argv, __doc__.splitlines()[0])
    try:
        config = make_config(args.rules, num_players=args.num_players or None)
    except ValueError as error:
        raise ValueError(f"--num-players {args.num_players}: {error}") from None
    # The preset's recipe when no --steps are given (--quick sets its own), else the steps given with
    # Recipe's defaults; an option given explicitly wins over the recipe's value.
    recipe = default_recipe(args.rules, config.num_players) if not args.steps and not args.quick else Recipe(args.steps)
    args = dataclasses.replace(args, steps=recipe.steps, step_from=args.step_from or recipe.step_from,
                               average=args.average or recipe.average,
                               carry_labels=args.carry_labels or recipe.carry_labels)
    if args.quick:  # tiny budgets, the same stages (two steps when none were given; PPO alone stays so)
        steps = ",".join([QUICK_STEP] * len(step_decisions(args.steps))) if args.steps else QUICK["steps"]
        args = dataclasses.replace(args, **{**QUICK, "steps": steps or "0"})
    if args.ppo_decisions == 0:
        args = dataclasses.replace(args, ppo_decisions=PPO_DECISIONS[args.rules])
    if not args.rollout_player:
        first, later = STEP_ROLLOUT_PLAYER[args.rules]
        later_steps = max(len(step_decisions(args.steps)) - 1, 0)
        args = dataclasses.replace(args, rollout_player="/".join([first] + [later] * later_steps))
    if not args.objective:
        args = dataclasses.replace(args, objective=STEP_OBJECTIVE[args.rules])
    if args.objective not in ("regress", "policy"):
        raise ValueError(f"--objective {args.objective!r}; allowed: regress, policy")
    for name in ("ppo_decisions", "workers"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    step_decisions(args.steps)
    if args.label_top < 0 or args.label_top == 1:
        raise ValueError(f"--label-top must be 0 (every legal action) or at least 2, got {args.label_top}")
    if args.eval_matches < 0:
        raise ValueError(f"--eval-matches must be at least 0, got {args.eval_matches}")
    if step_decisions(args.steps):
        from .labelling import check_rollout_player  # (loads torch: only when a step will label)

        for spec in step_rollout_players(args):
            check_rollout_player(spec, config)
        step_fit_targets(args)
        step_carried_labels(args)
    step_starts(args)
    averaged_steps(args)
    return args


# ----------------------------------------------------------------------------- the stages


def step_decisions(text: str) -> list[int]:
    """``"200000,300000"`` -> ``[200000, 300000]``, ``"0"`` -> ``[]`` (PPO alone); a clear
    ``ValueError`` otherwise."""
    try:
        steps = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"--steps {text!r}: give decisions per improvement step as integers, e.g. {CLASSIC_RECIPE.steps}") from None
    if steps == [0]:
        return []
    if not steps or min(steps) < 1:
        raise ValueError(f"--steps {text!r}: every step needs at least 1 decision, e.g. {CLASSIC_RECIPE.steps} "
                         "(or 0 alone: no improvement step)")
    return steps


def step_rollout_players(args: Args) -> list[str]:
    """Each improvement step's rollout player: ``--rollout-player``'s one spec for every step, or
    its ``/``-separated specs one per step (bot specs use commas, never slashes)."""
    return per_step("--rollout-player", args.rollout_player, step_decisions(args.steps))


def per_step(option: str, text: str, steps: list[int]) -> list[str]:
    """One value for every step, or ``/``-separated values one per step (``--rollout-player``,
    ``--fit-target``); a count that does not match the steps is refused."""
    values = [part.strip() for part in text.split("/")]
    if len(values) == 1:
        return values * len(steps)
    if len(values) != len(steps) or not all(values):
        raise ValueError(f"{option} {text!r}: give one value for every step, or one per step separated by '/' "
                         f"({len(steps)} steps: --steps {','.join(map(str, steps))})")
    return values


def step_fit_targets(args: Args) -> list[str]:
    """Each improvement step's ``training.improve --fit-target``."""
    targets = per_step("--fit-target", args.fit_target, step_decisions(args.steps))
    if not targets:
        return targets
    from .match_odds import FIT_TARGETS  # (loads torch: only when a step will fit)

    for target in targets:
        if target not in FIT_TARGETS:
            raise ValueError(f"--fit-target {args.fit_target!r}: {target!r} is not one of {', '.join(FIT_TARGETS)}")
    return targets


def step_carried_labels(args: Args) -> list[int]:
    """Each improvement step's count of earlier steps whose labels its fit adds (``--carry-labels``):
    one number is at most that many for every step (step k has k - 1 earlier ones), one per step is exact."""
    steps = step_decisions(args.steps)
    values = per_step("--carry-labels", args.carry_labels, steps)
    one_for_all = "/" not in args.carry_labels
    counts = []
    for step, value in enumerate(values, 1):
        if not value.isdigit() or (int(value) > step - 1 and not one_for_all):
            raise ValueError(f"--carry-labels {args.carry_labels!r}: step {step} can add the labels of 0 to {step - 1} "
                             f"earlier steps, not {value!r} (one number alone is at most that many for every step)")
        counts.append(min(int(value), step - 1))
    return counts


def step_starts(args: Args) -> list[int]:
    """Each improvement step's starting stage (``--step-from``): 0 the PPO stage, k step k."""
    steps = step_decisions(args.steps)
    if not args.step_from:
        return list(range(len(steps)))
    starts = []
    for step, value in enumerate(per_step("--step-from", args.step_from, steps), 1):
        if not value.isdigit() or int(value) >= step:
            raise ValueError(f"--step-from {args.step_from!r}: step {step} can start from 0 (the first stage) to "
                             f"{step - 1} (an earlier step), not {value!r}")
        starts.append(int(value))
    return starts


def averaged_steps(args: Args) -> list[int]:
    """The steps ``--average`` names (none: no average stage)."""
    if not args.average:
        return []
    count = len(step_decisions(args.steps))
    try:
        chosen = [int(part) for part in args.average.split(",")]
    except ValueError:
        chosen = []
    if len(chosen) < 2 or len(set(chosen)) != len(chosen) or not all(1 <= k <= count for k in chosen):
        raise ValueError(f"--average {args.average!r}: give two or more different steps, 1 to {count}, "
                         "comma-separated (e.g. 7,8,9,10)")
    return chosen


def stage_commands(args: Args, root: Path) -> dict[str, tuple[str, list[str]]]:
    """Each stage's module and argument list (what ``pipeline.json`` records)."""
    flags = [] if args.progress else ["--no-progress"]
    ppo = ["--run-dir", str(root / "ppo"), "--seed", str(args.seed), "--total-decisions", str(args.ppo_decisions)]
    if args.rules != "classic":  # (the classic stage's arguments stay those of the shipped recipe)
        ppo += ["--rules", args.rules, "--opponent-pool", PENALTY_POOL, *PENALTY_WARM_START]
        if not args.quick:
            ppo += ["--eval-matches", str(PENALTY_PPO_EVAL_MATCHES)]
    if args.num_players:
        ppo += ["--num-players", str(args.num_players)]
    if args.outlook_features and "--outlook-features" not in ppo:
        ppo += ["--outlook-features"]
    if args.quick:  # small tables and rollouts, one quick evaluation
        ppo += ["--num-tables", "16", "--rollout-length", "32", "--bc-updates", "2", "--eval-every", "2",
                "--eval-matches", "4"]
    commands = {"ppo": ("training.train", ppo + flags)}
    fitted = [root / "ppo" / "best.pt"]  # each stage's policy file: the PPO stage's, then step k's
    starts = step_starts(args)
    players = step_rollout_players(args)
    fit_targets = step_fit_targets(args)
    carried = step_carried_labels(args)
    for step, decisions in enumerate(step_decisions(args.steps), 1):
        seed = args.seed + 9 + step
        run_dir = root / f"improve{step}"
        improve = ["--init-from", str(fitted[starts[step - 1]]), "--run-dir", str(run_dir), "--seed", str(seed),
                   "--decisions", str(decisions), "--workers", str(args.workers),
                   "--eval-matches", str(args.eval_matches)]
        if args.label_top:
            improve += ["--label-top", str(args.label_top)]
        # (only what differs from training.improve's defaults, so the classic arguments stay the same)
        if players[step - 1] != "policy":
            improve += ["--rollout-player", players[step - 1]]
        if args.objective != "regress":
            improve += ["--objective", args.objective]
        if fit_targets[step - 1] != "label":
            improve += ["--fit-target", fit_targets[step - 1]]
        if carried[step - 1]:  # the latest earlier step first
            earlier = range(step - 1, step - 1 - carried[step - 1], -1)
            improve += ["--extra-labels", ",".join(str(root / f"improve{k}") for k in earlier)]
        if args.quick:
            improve += ["--chunk", "20", "--epochs", "1"]
        if args.ray_address:
            improve += ["--ray-address", args.ray_address]
        commands[f"improve{step}"] = ("training.improve", improve + flags)
        fitted.append(run_dir / "fitted.pt")
    if args.average:
        commands["average"] = ("training.soup", ["--out", str(root / "average" / "fitted.pt"),
                                                 *(str(fitted[k]) for k in averaged_steps(args))])
    return commands


def run_stage(module: str, argv: list[str], resume: bool) -> dict:
    """Run one stage in this process; its summary dict. A stopped PPO stage raises ``StageStopped``."""
    if module == "training.train":
        from . import train

        summary = train.main(argv + (["--resume"] if resume else []))
        if summary["stopped_by"]:
            raise StageStopped(summary["stopped_by"])
        if summary["files"]["best"] is None:
            raise RuntimeError("the PPO stage finished without an evaluated checkpoint (best.pt); "
                               "give it more decisions (--ppo-decisions)")
        return summary
    if module == "training.soup":  # (quick: redone whole on a resume)
        from . import soup

        return {"averaged": argv[2:], "out": str(soup.main(argv))}
    from . import improve

    return improve.main(argv + (["--resume"] if resume else []))


class StageStopped(Exception):
    """A stage stopped on a signal; ``--resume`` continues it."""


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    root = Path(args.run_dir)
    record_path = root / "pipeline.json"
    commands = stage_commands(args, root)
    planned = {name: [module, *stage_argv] for name, (module, stage_argv) in commands.items()}
    if record_path.exists() and not args.resume:
        raise ValueError(f"{record_path} exists: add --resume to continue that pipeline, or give another --run-dir")
    if args.resume and record_path.exists():
        record = json.loads(record_path.read_text())
        if record["stages_planned"] != planned:
            raise ValueError(f"--resume with other arguments than {record_path} was started with "
                             f"({record['command']!r}; a run begun under an earlier default recipe "
                             f"resumes with its --steps and --carry-labels given); it ran: "
                             f"{json.dumps(record['stages_planned'])}")
    else:
        root.mkdir(parents=True, exist_ok=True)
        record = {"command": f"{PROG} {' '.join(argv if argv is not None else sys.argv[1:])}".strip(),
                  "args": dataclasses.asdict(args), "stages_planned": planned, "stages": {}}
        # Written before the first stage starts, so that a run interrupted in it is resumed with
        # its own arguments too (and not started over by a plain rerun).
        record_path.write_text(json.dumps(record, indent=2, default=str))
    began = time.time()
    for number, (name, (module, stage_argv)) in enumerate(commands.items(), 1):
        marker = root / name / "stage.json"
        if marker.exists():
            print(f"[{number}/{len(commands)}] {name}: finished before, skipped", flush=True)
            continue
        print(f"[{number}/{len(commands)}] {name}: python -m {module} {' '.join(stage_argv)}", flush=True)
        start = time.time()
        summary = run_stage(module, stage_argv, resume=args.resume and (root / name).exists())
        seconds = time.time() - start
        result = {"module": module, "seconds": round(seconds, 1), "summary": summary}
        marker.write_text(json.dumps(result, indent=2, default=str))
        record["stages"][name] = result
        record_path.write_text(json.dumps(record, indent=2, default=str))
        print(f"[{number}/{len(commands)}] {name}: done in {seconds / 60:.1f} min", flush=True)
    for name in commands:  # stages finished in an earlier run
        if name not in record["stages"]:
            record["stages"][name] = json.loads((root / name / "stage.json").read_text())
    final = root / "final.pt"
    last = list(commands)[-1]
    shutil.copyfile(root / last / ("best.pt" if last == "ppo" else "fitted.pt"), final)
    record["final"] = str(final)
    record["seconds_total"] = round(sum(stage["seconds"] for stage in record["stages"].values()), 1)
    record_path.write_text(json.dumps(record, indent=2, default=str))
    print(f"pipeline finished: {final} ({record['seconds_total'] / 60:.1f} min over all stages; "
          f"this run {(time.time() - began) / 60:.1f} min); {record_path}", flush=True)
    return record


def cli(argv: list[str] | None = None) -> int:
    """``python -m training.pipeline``: exit 2 with a message on bad arguments, 130 when stopped."""
    try:
        main(argv)
    except ValueError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    except (StageStopped, KeyboardInterrupt) as stop:
        print(f"{PROG}: stopped ({stop or 'interrupted'}); continue with: {PROG} --resume "
              f"{' '.join(a for a in (argv if argv is not None else sys.argv[1:]) if a != '--resume')}",
              file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(cli())
