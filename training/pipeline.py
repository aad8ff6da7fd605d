"""The shipped policies end to end, in one command: ``python -m training.pipeline``.

Read top to bottom: recipes, settings, the stages, ``run``. A recipe (``Recipe``) is a Python
object: the first stage's settings and a list of improvement ``Step``s. Each stage is a function
called with its settings (``training.train.run``, ``training.improve.run``, ``training.soup``;
the registry ``STAGES`` says how each kind runs, is checked, is described and which file it
leaves), in a folder of its own under ``--run-dir`` (default ``runs/pipeline``; ``runs/pipeline-quick``
with ``--quick``):

1. ``ppo`` (``training.train``): imitation of the recipe's teacher, then PPO (classic: 3M
   decisions against ``simple``; the penalty recipes imitate ``lookahead`` alone); its
   ``best.pt`` (the best evaluation against ``simple``) goes on.
2. ``improve1``, ``improve2``, ...: one ``training.improve`` step per ``Step``: decisions
   labelled by rollouts from the step's start (the step before, or the one it names), fitted,
   evaluated against ``simple``.
3. ``average`` (``training.soup``, when the recipe averages): the uniform weight average of the
   named steps' fitted files.

The last stage's file is copied to ``RUN_DIR/final.pt``. ``RUN_DIR/pipeline.json`` holds every
stage's settings, wall time and results; each stage's own files stay in its folder.

**Recipes** (``RECIPES``; ``--recipe NAME``, by default the preset's): ``classic`` (PPO, then three
steps of 800,000 labels, each later one also fitting the labels of the steps before it: measured
81.2 min on two cores, a final policy at about 74% against ``simple``), ``classic-short`` (steps of
200,000 and 300,000: about 27 min, about 61%), ``classic-shipped`` (the shipped file's five
steps, about two and a half hours), ``penalty-3p`` (also for 2 players) and ``penalty-4p``
(imitation of ``lookahead``, then the steps that made the shipped penalty files: the first step's
rollouts play ``lookahead`` in the learner's seat, every step fits with the all-actions policy
objective; at 3 players ten steps averaged over steps 7-10). docs/classic_policy.md and
docs/penalty_policies.md record how each was measured.

**Resuming.** ``--resume`` skips the finished stages (``RUN_DIR/STAGE/stage.json``) and resumes
the interrupted one (PPO from its ``last.pt``, labelling from the label chunks already written);
a resume with other settings is refused (``training.manifest``); a run folder copied or moved
elsewhere resumes there. Ctrl-C or SIGTERM stops the pipeline with the command that resumes it,
exit status 128 + the signal's number. **Scaling out.**
``OKGIN_RAY_ADDRESS`` (the environment variable) runs the labelling jobs on a Ray cluster (``training.workers``); PPO runs here.
**Quick.** ``--quick`` runs the recipe's first two steps (at most) on tiny budgets: a smoke test
of a few minutes.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from okgin_env.rules.config import MAX_PLAYERS, PRESETS, make_config

from .cli import MAX_SEED, Command, RunOptions, check_settings, make_run_dir, setting
from .manifest import (check_manifest, config_dict, recorded_place, run_place, runtime_fields, same_setting,
                       with_defaults, write_manifest)
from .workers import ray_address_setting

PROG = "python -m training.pipeline"


# ----------------------------------------------------------------------------- recipes


@dataclass(frozen=True)
class Step:
    """One improvement step: ``decisions`` labels; the stage it starts from (``start``: 0 the PPO
    stage, k step k; None: the step before); who plays the learner's seat in its rollouts; how many
    earlier steps' labels its fit adds, the latest first (``carry``)."""

    decisions: int
    start: int | None = None
    rollout_player: str = "policy"
    carry: int = 0


@dataclass(frozen=True)
class Recipe:
    """A table's whole recipe: the first stage's settings, the steps, their fit and the average."""

    rules: str
    ppo_decisions: int
    steps: tuple[Step, ...]
    objective: str = "regress"  # training.improve --objective of every step
    bc_teacher: str = "simple"
    bc_updates: int = 15
    opponent_pool: str = "simple"
    outlook_features: bool = False
    ppo_eval_matches: int = 400
    average: tuple[int, ...] = ()  # steps whose fitted files are averaged into the final file

    def check(self) -> None:
        """A ``ValueError`` naming the first step that cannot run."""
        for number, step in enumerate(self.steps, 1):
            least = improve_decisions_low()  # (the step's improve run's own bound)
            if step.decisions < least:
                raise ValueError(f"step {number}: decisions must be at least {least}, got {step.decisions}")
            if step.start is not None and not 0 <= step.start < number:
                raise ValueError(f"step {number} can start from 0 (the first stage) to {number - 1}, not {step.start}")
            if not 0 <= step.carry < number:
                raise ValueError(f"step {number} can add the labels of 0 to {number - 1} earlier steps, not {step.carry}")
        if self.average and (len(self.average) < 2 or len(set(self.average)) != len(self.average)
                             or not all(1 <= k <= len(self.steps) for k in self.average)):
            raise ValueError(f"average {self.average}: two or more different steps, 1 to {len(self.steps)}")


PENALTY_BC_UPDATES = 60  # updates of 128 tables x 64 decisions imitating lookahead
_P = 100_000  # the penalty steps' labels (each further step was kept while it still won more)


def _penalty(*steps: Step, average: tuple[int, ...] = ()) -> Recipe:
    return Recipe("penalty", PENALTY_BC_UPDATES * 128 * 64, steps, objective="policy", bc_teacher="lookahead",
                  bc_updates=PENALTY_BC_UPDATES, opponent_pool="simple@3 self@1", outlook_features=True,
                  ppo_eval_matches=200, average=average)


RECIPES: dict[str, Recipe] = {
    "classic": Recipe("classic", 3_000_000, (Step(800_000), Step(800_000, carry=1), Step(800_000, carry=2))),
    "classic-short": Recipe("classic", 3_000_000, (Step(200_000), Step(300_000))),
    # standard gin (knock at 10): the classic recipe's stages, not yet tuned for these rules
    "standard": Recipe("standard", 3_000_000, (Step(800_000), Step(800_000, carry=1), Step(800_000, carry=2))),
    "classic-shipped": Recipe("classic", 3_000_000, (Step(200_000), Step(300_000), Step(1_000_000),
                                                     Step(1_000_000, carry=1), Step(1_000_000, carry=2))),
    # steps 1-8 in a chain, steps 9 and 10 both from step 8; the final file averages steps 7-10
    "penalty-3p": _penalty(Step(_P, rollout_player="lookahead"), *[Step(_P)] * 7, Step(_P, start=8),
                           Step(3 * _P, start=8), average=(7, 8, 9, 10)),
    "penalty-4p": _penalty(Step(_P, rollout_player="lookahead"), *[Step(_P)] * 5, Step(5 * _P)),
}


def default_recipe(rules: str, num_players: int) -> str:
    """The recipe a table runs when ``--recipe`` is not given."""
    if rules in ("classic", "standard"):
        return rules
    return "penalty-4p" if num_players == 4 else "penalty-3p"


def improve_decisions_low() -> int:
    """The fewest decisions an improvement step labels: ``training.improve``'s ``--decisions`` bound."""
    from .improve import ImproveConfig

    return next(item.metadata["low"] for item in dataclasses.fields(ImproveConfig) if item.name == "decisions")


def quick_recipe(recipe: Recipe) -> Recipe:
    """``--quick``: the recipe's first two steps (at most), 40 decisions each, no average."""
    steps = tuple(dataclasses.replace(step, decisions=40, start=None if step.start is None else min(step.start, k),
                                      carry=min(step.carry, k))
                  for k, step in enumerate(recipe.steps[:2]))
    return dataclasses.replace(recipe, ppo_decisions=2_048, steps=steps, average=())


# ----------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class PipelineConfig:
    """What a pipeline run makes: a recipe for a table, its seed, and how it runs."""

    rules: str = setting("classic", "rules preset to train for", choices=PRESETS)
    num_players: int = setting(0, "seats at the table (classic: 2; penalty: 2, 3 or 4); 0: the preset's own count",
                               low=0, high=MAX_PLAYERS)
    recipe: str = setting("", f"the recipe: {', '.join(RECIPES)}; empty: the table's (classic, or penalty-3p / "
                          "penalty-4p)", choices=("", *RECIPES))
    seed: int = setting(1, "seed of the PPO stage; improvement step k uses seed + 9 + k", low=0,
                       high=MAX_SEED - 9 - max(len(recipe.steps) for recipe in RECIPES.values()))
    eval_matches: int = setting(1000, "mirrored matches against simple for the start and the fitted policy of each step",
                                low=0)
    workers: int = setting(2, "labelling and evaluation processes (or Ray CPUs with OKGIN_RAY_ADDRESS=local)", low=1,
                           high=256, runtime=True)
    ray_address: str = ray_address_setting()
    quick: bool = setting(False, "tiny budgets everywhere: a smoke test of the recipe's first two steps")


def resolve(config: PipelineConfig) -> tuple[Recipe, int]:
    """The recipe this run follows (shrunk for ``--quick``) and the table's player count; a
    ``ValueError`` when the recipe is for another table."""
    try:
        table = make_config(config.rules, num_players=config.num_players or None)
    except ValueError as error:
        raise ValueError(f"--num-players {config.num_players}: {error}") from None
    name = config.recipe or default_recipe(config.rules, table.num_players)
    recipe = RECIPES[name]
    if recipe.rules != config.rules:
        raise ValueError(f"--recipe {name} is for --rules {recipe.rules}, not {config.rules}")
    recipe.check()
    return (quick_recipe(recipe) if config.quick else recipe), table.num_players


# ----------------------------------------------------------------------------- the stages


def stage_configs(config: PipelineConfig, root: Path) -> dict[str, Any]:
    """Each stage's settings, in order: a ``TrainConfig``, ``ImproveConfig``s, and the average's
    input files (what ``pipeline.json`` records)."""
    from .improve import FitSettings, ImproveConfig
    from .train import RECIPE_HYPERPARAMETERS, TrainConfig

    recipe, num_players = resolve(config)
    ppo = TrainConfig(seed=config.seed, rules=config.rules, num_players=config.num_players,
                      total_decisions=recipe.ppo_decisions, bc_updates=recipe.bc_updates, bc_teacher=recipe.bc_teacher,
                      outlook_features=recipe.outlook_features, opponent_pool=recipe.opponent_pool,
                      eval_matches=recipe.ppo_eval_matches, network="mlp", hyper=RECIPE_HYPERPARAMETERS)
    if config.quick:  # small tables and rollouts, an evaluation every other update
        ppo = dataclasses.replace(ppo, num_tables=16, bc_updates=2, eval_every=2, eval_matches=4,
                                  hyper=dataclasses.replace(RECIPE_HYPERPARAMETERS, rollout_length=32))
    stages: dict[str, Any] = {"ppo": ppo}
    fitted = [root / "ppo" / "best.pt"]  # each stage's policy file: the PPO stage's, then step k's
    fit = FitSettings(chunk=20, epochs=1) if config.quick else FitSettings()
    for number, step in enumerate(recipe.steps, 1):
        start = number - 1 if step.start is None else step.start
        earlier = range(number - 1, number - 1 - step.carry, -1)  # the latest earlier step first
        stages[f"improve{number}"] = ImproveConfig(
            init_from=str(fitted[start]), seed=config.seed + 9 + number, decisions=step.decisions,
            objective=recipe.objective, rollout_player=step.rollout_player,
            extra_labels=",".join(str(root / f"improve{k}") for k in earlier),
            eval_matches=0 if config.quick else config.eval_matches, workers=config.workers,
            ray_address=config.ray_address, fit=fit)
        fitted.append(root / f"improve{number}" / "fitted.pt")
    if recipe.average:
        stages["average"] = [str(fitted[k]) for k in recipe.average]
    return stages


class StageStopped(KeyboardInterrupt):
    """A stage stopped on a signal (``signal_name``); ``--resume`` continues it."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


def _run_ppo(settings: Any, folder: Path, resume: bool, progress_bar: bool) -> dict[str, Any]:
    from . import train

    summary = train.run(settings, folder, resume=resume, progress_bar=progress_bar,
                        command=None)  # (the pipeline says how to continue)
    if summary["stopped_by"]:
        raise StageStopped(summary["stopped_by"])
    if summary["files"]["best"] is None:
        raise ValueError(f"the PPO stage in {folder} finished without an evaluated checkpoint (best.pt); "
                         "run again with --resume to evaluate its final policy")
    return summary


def _check_ppo(settings: Any, table: Any) -> None:
    from .train import check_config

    check_settings(settings)
    check_config(settings)


def _describe_ppo(summary: dict[str, Any]) -> str:
    best = summary.get("best_win_rate_vs_simple", -1)
    return f"best win rate vs simple {100 * best:.1f}%" if best >= 0 else "no evaluation"


def _run_improve(settings: Any, folder: Path, resume: bool, progress_bar: bool) -> dict[str, Any]:
    from . import improve

    return improve.run(settings, folder, resume=resume, progress_bar=progress_bar)


def _check_improve(settings: Any, table: Any) -> None:
    from .labelling import check_rollout_player

    check_settings(settings)
    check_rollout_player(settings.rollout_player, table)


def _describe_improve(summary: dict[str, Any]) -> str:
    fitted = summary.get("vs_simple_fitted")
    last = summary["fit"][-1] if summary.get("fit") else None
    parts = [f"{summary['labelled_decisions']:,} labelled decisions"]
    if last:
        parts.append(f"held-out gain {last['validation_gain_points']:+.3f} ± {last['validation_gain_se']:.3f} points")
    if fitted:
        start = summary["vs_simple_start"]
        parts.append(f"vs simple {100 * start['win_rate']:.1f}% -> {100 * fitted['win_rate']:.1f}%")
    return ", ".join(parts)


def _run_average(settings: Any, folder: Path, resume: bool, progress_bar: bool) -> dict[str, Any]:
    from .policy import write_checkpoint
    from .soup import average_checkpoints

    folder.mkdir(parents=True, exist_ok=True)
    write_checkpoint(folder / "fitted.pt", average_checkpoints(settings))
    return {"averaged": settings, "out": str(folder / "fitted.pt")}


@dataclass(frozen=True)
class Stage:
    """What the pipeline needs of one kind of stage: ``run(settings, folder, resume, progress_bar)
    -> summary``, ``check(settings, rules_config)`` before the first stage starts (a ValueError),
    the policy file it leaves in its folder (``output``) and one readable line of its summary."""

    run: Callable[[Any, Path, bool, bool], dict[str, Any]]
    check: Callable[[Any, Any], None]
    output: str
    describe: Callable[[dict[str, Any]], str]


#: Every kind of stage, by the name its folders take (``improve3`` is a stage of kind ``improve``).
#: A new kind of stage is one module and one entry here (and the recipe field that plans it).
STAGES: dict[str, Stage] = {
    "ppo": Stage(_run_ppo, _check_ppo, "best.pt", _describe_ppo),
    "improve": Stage(_run_improve, _check_improve, "fitted.pt", _describe_improve),
    "average": Stage(_run_average, lambda files, table: None, "fitted.pt",
                     lambda summary: f"averaged {len(summary['averaged'])} files"),
}


def stage_kind(name: str) -> Stage:
    """The ``STAGES`` entry of the stage named ``name`` (its name without the step number)."""
    return STAGES[name.rstrip("0123456789")]


def run_stage(name: str, settings: Any, root: Path, *, resume: bool, progress_bar: bool) -> dict[str, Any]:
    """Run one stage; its summary. A PPO stage stopped by a signal raises ``StageStopped``."""
    return stage_kind(name).run(settings, root / name, resume, progress_bar)


def describe(name: str, summary: dict[str, Any]) -> str:
    """One readable line of what a stage achieved."""
    return stage_kind(name).describe(summary)


# ----------------------------------------------------------------------------- run


def run(config: PipelineConfig, run_dir: str | Path, *, resume: bool = False, progress_bar: bool = True,
        command: str = PROG) -> dict[str, Any]:
    """Run (or resume) the whole recipe in ``run_dir``; the record (also ``pipeline.json``)."""
    check_settings(config)
    root = Path(run_dir)
    record_path = root / "pipeline.json"
    stages = stage_configs(config, root)
    check_stages(config, stages)
    planned = {name: settings if isinstance(settings, list) else config_dict(settings) for name, settings in stages.items()}
    if record_path.exists() and not resume:
        raise ValueError(f"{record_path} exists: add --resume to continue that pipeline, or give another --run-dir")
    if resume and record_path.exists():
        check_manifest(root, config)
        record = read_record(record_path)
        recorded = record.get("stages_planned") or {}
        # (paths into the run folder compare relative to it: a copied or moved run resumes)
        # (a setting added since the run started counts as recorded at its default: manifest.with_defaults)
        changed = [name for name in sorted(set(planned) | set(recorded))
                   if not same_setting(without_runtime(with_defaults(recorded.get(name), stages.get(name)),
                                                       stages.get(name)),
                                       without_runtime(planned.get(name), stages.get(name)),
                                       recorded_place(record), run_place(root))]
        if changed:
            raise ValueError(f"--resume: the stages of the run in {root} were planned otherwise ({', '.join(changed)} "
                             "differ: the recipe or the stages' settings changed since it started); start a new run "
                             "in another --run-dir")
    else:
        make_run_dir(root)
        record = {"command": command, "config": config_dict(config), "stages": {}}
    # Written before the first stage starts, so that a run interrupted in it is resumed with its own
    # settings too (and not started over by a plain rerun).
    write_manifest(root, config)
    record["stages_planned"], record["place"] = planned, run_place(root)
    write_record(record_path, record)
    began = time.time()
    done_seconds = 0.0
    for number, (name, settings) in enumerate(stages.items(), 1):
        marker = root / name / "stage.json"
        finished = read_marker(marker)
        if finished is not None:
            record["stages"][name] = finished
            print(f"[{number}/{len(stages)}] {name}: finished before, skipped", flush=True)
            continue
        print(f"[{number}/{len(stages)}] {name}: started{eta(stages, number, done_seconds, began)}", flush=True)
        start = time.time()
        summary = run_stage(name, settings, root, resume=resume and (root / name).exists(), progress_bar=progress_bar)
        seconds = time.time() - start
        done_seconds += seconds
        result = {"seconds": round(seconds, 1), "summary": summary}
        marker.write_text(json.dumps(result, indent=2, default=str))
        record["stages"][name] = result
        write_record(record_path, record)
        print(f"[{number}/{len(stages)}] {name}: done in {seconds / 60:.1f} min: {describe(name, summary)}", flush=True)
    final = root / "final.pt"
    last = list(stages)[-1]
    shutil.copyfile(root / last / stage_kind(last).output, final)
    record["final"] = str(final)
    record["seconds_total"] = round(sum(stage["seconds"] for stage in record["stages"].values()), 1)
    write_record(record_path, record)
    print(f"pipeline finished: {final} ({record['seconds_total'] / 60:.1f} min over all stages; "
          f"this run {(time.time() - began) / 60:.1f} min); {record_path}", flush=True)
    return record


def check_stages(config: PipelineConfig, stages: dict[str, Any]) -> None:
    """Every stage's settings checked before the first one starts (a bad rollout player, a recipe's
    bad objective, a Ray address without Ray are found now, not after the PPO stage)."""
    from .workers import require_ray

    if config.ray_address:
        require_ray(config.ray_address)
    table = make_config(config.rules, num_players=config.num_players or None)
    for name, settings in stages.items():
        try:
            stage_kind(name).check(settings, table)
        except ValueError as error:
            raise ValueError(f"stage {name}: {error}") from None


def without_runtime(planned: Any, settings: Any) -> Any:
    """A stage's planned settings without its ``runtime_fields`` (how it runs, which a resume may change)."""
    if not isinstance(planned, dict) or not dataclasses.is_dataclass(settings):
        return planned
    free = runtime_fields(settings)
    return {key: value for key, value in planned.items() if key not in free}


def eta(stages: dict[str, Any], number: int, done_seconds: float, began: float) -> str:
    """`` (about N min left for the whole recipe)`` once a stage of this run has finished: the time
    per labelled decision so far times the labels still to come (the stages' cost is mostly labelling)."""
    if done_seconds <= 0:
        return ""
    names = list(stages)
    work = [getattr(stages[name], "decisions", 0) for name in names]
    done, left = sum(work[: number - 1]), sum(work[number - 1:])
    if not done:
        return ""
    return f" (about {done_seconds / done * left / 60:.0f} min left for the whole recipe)"


def read_record(path: Path) -> dict[str, Any]:
    """``pipeline.json`` of the run being resumed; a ``ValueError`` naming it if damaged."""
    try:
        record = json.loads(path.read_text())
        if not isinstance(record, dict) or not isinstance(record.get("stages"), dict):
            raise ValueError("not a pipeline record (no 'stages' object)")
        if not isinstance(record.get("stages_planned", {}), dict) or not all(
                isinstance(stage, (dict, list)) for stage in record.get("stages_planned", {}).values()):
            raise ValueError("its 'stages_planned' is not an object of each stage's settings")
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} is damaged ({error}); start the pipeline again in another --run-dir") from None
    return record


def read_marker(path: Path) -> dict[str, Any] | None:
    """A finished stage's ``stage.json``; None when the stage has not finished (no marker, or one
    that cannot be read: the stage is run again, resuming what it had written)."""
    try:
        marker = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(marker, dict) and isinstance(marker.get("seconds"), (int, float)) and "summary" in marker
    return marker if ok else None


def write_record(path: Path, record: dict[str, Any]) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(record, indent=2, default=str))
    partial.replace(path)


# ----------------------------------------------------------------------------- command line


def quick_run_dir(config: PipelineConfig, options: RunOptions) -> RunOptions:
    """A smoke test (``--quick``) never mixes with a real run: its default folder is its own."""
    if config.quick and options.run_dir == "runs/pipeline":
        return dataclasses.replace(options, run_dir="runs/pipeline-quick")
    return options


# SIGTERM in any stage stops the pipeline as Ctrl-C does (PPO handles its own)
COMMAND = Command(PROG, __doc__, PipelineConfig, run, run_dir="runs/pipeline", sigterm=True,
                  says_how_to_resume=True, adjust=quick_run_dir)
parse_args, main, cli = COMMAND.parse_args, COMMAND.main, COMMAND.cli


if __name__ == "__main__":
    sys.exit(cli())
