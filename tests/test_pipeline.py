"""The one-command pipeline (training.pipeline): recipes, every stage in turn, resumable, refusing a mixed-up resume."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from training.pipeline import RECIPES, PipelineConfig, Recipe, Step, cli, quick_recipe, stage_configs  # noqa: E402
from training.pipeline import main as pipeline_main  # noqa: E402
from training.policy import CheckpointError, load_policy  # noqa: E402

pytestmark = pytest.mark.long  # one of the default suite's long modules: -m "not slow and not long" skips it


def test_quick_pipeline_runs_every_stage_and_resumes_the_interrupted_one(tmp_path, capsys):
    run_dir = tmp_path / "pipe"
    argv = ["--quick", "--run-dir", str(run_dir), "--workers", "1"]
    record = pipeline_main(argv)
    assert list(record["stages"]) == ["ppo", "improve1", "improve2"]
    assert all(stage["seconds"] > 0 for stage in record["stages"].values())
    assert record["stages"]["improve1"]["summary"]["labelled_decisions"] == 40
    assert record["stages"]["improve2"]["summary"]["labelled_decisions"] == 80  # the classic recipe carries step 1's labels
    final = run_dir / "final.pt"
    load_policy(final)  # a policy for play and evaluation
    assert final.read_bytes() == (run_dir / "improve2" / "fitted.pt").read_bytes()
    # improve2 starts from improve1's result, improve1 from the PPO stage's best checkpoint.
    planned = record["stages_planned"]
    assert planned["improve1"]["init_from"] == str(run_dir / "ppo" / "best.pt")
    assert planned["improve2"]["init_from"] == str(run_dir / "improve1" / "fitted.pt")
    assert planned["improve2"]["extra_labels"] == str(run_dir / "improve1")
    out = capsys.readouterr().out
    assert "[2/3] improve1: done in" in out and "40 labelled decisions" in out  # a readable summary
    assert "min left for the whole recipe" in out  # the ETA, once a stage has finished

    # Interrupt the last stage (its marker and one label chunk gone): --resume redoes only that.
    (run_dir / "improve2" / "stage.json").unlink()
    (run_dir / "improve2" / "labels_0001.npz").unlink()
    kept = (run_dir / "improve2" / "labels_0000.npz").stat().st_mtime_ns
    ppo_marker = (run_dir / "ppo" / "stage.json").read_text()
    record = pipeline_main([*argv, "--resume"])
    out = capsys.readouterr().out
    assert "[1/3] ppo: finished before, skipped" in out and "[2/3] improve1: finished before, skipped" in out
    assert "resuming: 1 of 2 label chunks" in out
    assert (run_dir / "improve2" / "labels_0000.npz").stat().st_mtime_ns == kept
    assert (run_dir / "ppo" / "stage.json").read_text() == ppo_marker
    assert json.loads((run_dir / "pipeline.json").read_text())["final"] == str(final)

    # Starting over in the same folder without --resume, or resuming with other settings, is refused.
    assert cli(argv) == 2
    assert cli([*argv, "--resume", "--seed", "5"]) == 2
    err = capsys.readouterr().err
    assert "add --resume" in err and "seed: 1 -> 5" in err


def test_quick_has_its_own_run_folder():
    from training.pipeline import parse_args

    assert parse_args(["--quick"])[1].run_dir == "runs/pipeline-quick"
    assert parse_args([])[1].run_dir == "runs/pipeline"
    assert parse_args(["--quick", "--run-dir", "x"])[1].run_dir == "x"


@pytest.mark.parametrize("flag, value, message", [("--recipe", "many", "--recipe 'many'; allowed"),
                                                  ("--workers", "0", "--workers must be at least 1"),
                                                  ("--eval-matches", "-1", "--eval-matches must be at least 0"),
                                                  ("--recipe", "penalty-3p", "is for --rules penalty, not classic")])
def test_bad_settings_are_refused_before_anything_is_written(tmp_path, flag, value, message, capsys):
    assert cli(["--run-dir", str(tmp_path / "p"), flag, value]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_a_run_stopped_in_its_first_stage_is_resumed_with_its_own_settings(tmp_path, monkeypatch, capsys):
    import training.pipeline as pipeline

    def stopped(*_args, **_kwargs):
        raise pipeline.StageStopped("SIGTERM")

    argv = ["--quick", "--run-dir", str(tmp_path / "p")]
    monkeypatch.setattr(pipeline, "run_stage", stopped)
    assert cli(argv) == 128 + signal.SIGTERM
    assert "stopped by SIGTERM; continue with: python -m training.pipeline --quick" in capsys.readouterr().err
    assert cli(argv) == 2  # not started over by a plain rerun
    assert cli([*argv, "--resume", "--seed", "4"]) == 2  # nor resumed with other settings
    assert "other settings" in capsys.readouterr().err


def quick_pipeline_stopped_at(run_dir: Path, marker: Path, seconds: float) -> tuple[list[str], int, str]:
    """A ``--quick`` pipeline in a process of its own, sent SIGTERM once ``marker`` exists:
    ``(its arguments, its exit status, its stderr)``; skips the test if it finished first."""
    argv = ["--quick", "--run-dir", str(run_dir), "--workers", "1"]
    process = subprocess.Popen([sys.executable, "-m", "training.pipeline", *argv],
                               cwd=Path(__file__).resolve().parents[1], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.time() + seconds
    while not marker.exists() and time.time() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    if process.returncode == 0:
        pytest.skip(f"the pipeline finished before {marker.name} appeared")
    return argv, process.returncode, err


def test_a_pipeline_stopped_in_its_ppo_stage_resumes_to_the_end(tmp_path):
    """Issue 42: SIGTERM during PPO, then --resume: the resumed PPO stage evaluates its final policy
    (the stop removed the unevaluated candidates), so the pipeline goes on."""
    run_dir = tmp_path / "p"
    argv, returncode, err = quick_pipeline_stopped_at(run_dir, run_dir / "ppo" / "last.pt", seconds=120)
    assert returncode == 128 + signal.SIGTERM and "--resume" in err
    assert cli([*argv, "--resume"]) == 0
    load_policy(run_dir / "final.pt")


def test_quick_penalty_pipeline_trains_labels_and_fits_at_a_three_player_table(tmp_path):
    run_dir = tmp_path / "pen3"
    record = pipeline_main(["--quick", "--rules", "penalty", "--num-players", "3", "--run-dir", str(run_dir),
                            "--workers", "1"])
    planned = record["stages_planned"]
    assert (planned["ppo"]["rules"], planned["ppo"]["num_players"]) == ("penalty", 3)
    assert planned["ppo"]["opponent_pool"] == "simple@3 self@1" and planned["ppo"]["bc_teacher"] == "lookahead"
    assert planned["improve1"]["rollout_player"] == "lookahead" and planned["improve2"]["rollout_player"] == "policy"
    assert planned["improve1"]["objective"] == "policy"
    assert list(record["stages"]) == ["ppo", "improve1", "improve2"]
    policy = load_policy(run_dir / "final.pt", rules="penalty", num_players=3)
    with pytest.raises(CheckpointError):
        load_policy(run_dir / "final.pt", rules="penalty", num_players=4)
    from okgin_env import env as make_env

    table = make_env(rules="penalty", num_players=3)
    table.reset(seed=3)
    for agent in table.agent_iter(max_iter=200):  # the fitted policy plays legal moves in every seat
        observation, _, terminated, truncated, _ = table.last()
        action = None if terminated or truncated else policy.act(observation)
        if action is not None:
            assert observation["action_mask"][action] == 1
        table.step(action)


def test_a_player_count_the_preset_does_not_have_is_refused(tmp_path, capsys):
    assert cli(["--rules", "penalty", "--num-players", "5", "--run-dir", str(tmp_path / "p")]) == 2
    assert "--num-players must be at least 0 and at most 4" in capsys.readouterr().err
    assert cli(["--num-players", "3", "--run-dir", str(tmp_path / "p")]) == 2  # classic is two-player
    assert not (tmp_path / "p").exists()


def test_the_recipes_stages():
    """The shipped recipes as stage settings: who starts from what, whose labels are carried, the average."""
    root = Path("/r")
    classic = stage_configs(PipelineConfig(), root)
    assert list(classic) == ["ppo", "improve1", "improve2", "improve3"]
    assert classic["ppo"].total_decisions == 3_000_000 and classic["ppo"].bc_teacher == "simple"
    assert [classic[f"improve{k}"].decisions for k in (1, 2, 3)] == [800_000] * 3
    assert classic["improve3"].extra_labels == "/r/improve2,/r/improve1"
    assert [classic[f"improve{k}"].seed for k in (1, 2, 3)] == [11, 12, 13]
    penalty = stage_configs(PipelineConfig(rules="penalty", num_players=3), root)
    assert list(penalty)[-1] == "average" and penalty["average"] == [f"/r/improve{k}/fitted.pt" for k in (7, 8, 9, 10)]
    assert penalty["improve9"].init_from == penalty["improve10"].init_from == "/r/improve8/fitted.pt"
    assert penalty["ppo"].total_decisions == 60 * 128 * 64 and penalty["ppo"].outlook_features
    four = stage_configs(PipelineConfig(rules="penalty", num_players=4), root)
    assert [four[f"improve{k}"].decisions for k in range(1, 8)] == [100_000] * 6 + [500_000]
    assert stage_configs(PipelineConfig(rules="penalty", num_players=2), root).keys() == penalty.keys()


def test_quick_keeps_the_first_two_steps_and_bad_recipes_are_refused():
    quick = quick_recipe(RECIPES["penalty-3p"])
    assert [step.decisions for step in quick.steps] == [40, 40] and quick.average == ()
    assert quick.steps[0].rollout_player == "lookahead"
    for steps, average, message in (((Step(10, start=1),), (), "step 1 can start from 0"),
                                    ((Step(10), Step(10, carry=2)), (), "step 2 can add the labels of 0 to 1"),
                                    ((Step(1),), (), "decisions must be at least 2"),
                                    ((Step(10), Step(10)), (2,), "two or more different steps")):
        with pytest.raises(ValueError, match=message):
            dataclasses.replace(Recipe("classic", 10, steps), average=average).check()


@pytest.mark.parametrize("content", ["[]", "{}", "{not json", '{"stages": []}', '{"stages": {}, "stages_planned": "x"}',
                                     '{"stages": {}, "stages_planned": {"ppo": 3}}'])
def test_a_damaged_pipeline_record_is_named(tmp_path, content, capsys):
    """Issue 42: a damaged pipeline.json on --resume is one line naming the file (exit 2)."""
    import training.pipeline as pipeline

    run_dir = tmp_path / "p"
    run_dir.mkdir()
    (run_dir / "pipeline.json").write_text(content)
    assert cli(["--quick", "--run-dir", str(run_dir), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "pipeline.json is damaged" in err and len(err.strip().splitlines()) == 1
    assert pipeline.read_marker(run_dir / "missing.json") is None
    (run_dir / "stage.json").write_text("[]")
    assert pipeline.read_marker(run_dir / "stage.json") is None  # a damaged marker: the stage runs again


@pytest.mark.parametrize("run_dir", ["/dev/null", "/proc/self/nope"])
def test_a_run_folder_that_cannot_be_one_is_refused_in_one_line(run_dir, capsys):
    from training.train import cli as train_cli

    for command in (cli, train_cli):
        assert command([*(["--quick"] if command is cli else []), "--run-dir", run_dir]) == 2
        err = capsys.readouterr().err
        assert f"--run-dir {run_dir}: cannot be used as the run folder" in err and len(err.strip().splitlines()) == 1


def test_sigterm_in_an_improvement_stage_stops_the_pipeline_with_a_message(tmp_path):
    """Issue 42: SIGTERM while a step labels ends the pipeline with its message and exit 143, not -15."""
    run_dir = tmp_path / "p"
    _, returncode, err = quick_pipeline_stopped_at(run_dir, run_dir / "improve1" / "config.json", seconds=300)
    assert returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM; continue with: python -m training.pipeline --quick" in err


def test_a_resume_whose_stages_were_planned_otherwise_is_refused(tmp_path, monkeypatch, capsys):
    """The recipe or a stage's settings changed since the run started: refused, naming the stages."""
    import training.pipeline as pipeline

    def stopped(*_args, **_kwargs):
        raise pipeline.StageStopped("SIGINT")

    run_dir = tmp_path / "p"
    argv = ["--quick", "--run-dir", str(run_dir)]
    monkeypatch.setattr(pipeline, "run_stage", stopped)
    assert cli(argv) == 130
    record = json.loads((run_dir / "pipeline.json").read_text())
    record["stages_planned"]["improve2"]["decisions"] = 41
    (run_dir / "pipeline.json").write_text(json.dumps(record))
    assert cli([*argv, "--resume"]) == 2
    assert "improve2 differ" in capsys.readouterr().err
    record["stages_planned"]["improve2"]["decisions"] = 40
    record["stages_planned"]["improve2"]["workers"] = 7  # how a stage runs may change
    del record["stages_planned"]["improve2"]["teacher"]  # planned before the setting existed: its default
    (run_dir / "pipeline.json").write_text(json.dumps(record))
    assert cli([*argv, "--resume"]) == 130


@pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="Ray is installed here")
def test_a_ray_address_without_ray_is_refused_before_any_stage(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OKGIN_RAY_ADDRESS", "local")
    assert cli(["--quick", "--run-dir", str(tmp_path / "p")]) == 2
    assert "Ray" in capsys.readouterr().err and not (tmp_path / "p").exists()


def test_a_bad_stage_setting_is_found_before_the_first_stage(tmp_path, monkeypatch, capsys):
    import training.pipeline as pipeline

    bad = dataclasses.replace(RECIPES["classic"], steps=(Step(10, rollout_player="aggressor"),))
    monkeypatch.setitem(pipeline.RECIPES, "classic", bad)
    assert cli(["--run-dir", str(tmp_path / "p")]) == 2
    assert "stage improve1:" in capsys.readouterr().err and not (tmp_path / "p").exists()


@pytest.mark.parametrize("module", ["train", "improve", "pipeline", "exploit"])
def test_help_names_the_program_and_is_plain_text(module):
    done = subprocess.run([sys.executable, "-m", f"training.{module}", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python -m training.{module}")
    assert "``" not in done.stdout  # docstring literals are shown as plain text


def test_a_ppo_stage_stopped_while_its_last_evaluation_ran_is_finished_by_the_resume(tmp_path, monkeypatch, capsys):
    """Issue 52 #17: SIGTERM after the PPO stage's last update, before any evaluation finished:
    exit 143, no "nothing saved"; the resume evaluates the final weights (best.pt) and the recipe ends."""
    import training.run

    collect = training.run.Evaluator.collect

    def no_evaluation_finishes(self, wait=False, give_up=lambda: False):
        if wait:  # the signal comes while the last candidate is evaluated
            signal.raise_signal(signal.SIGTERM)
            assert give_up()
        return None

    run_dir = tmp_path / "p"
    argv = ["--quick", "--run-dir", str(run_dir), "--workers", "1"]
    monkeypatch.setattr(training.run.Evaluator, "collect", no_evaluation_finishes)
    stopped = cli(argv)
    err = capsys.readouterr().err
    monkeypatch.setattr(training.run.Evaluator, "collect", collect)
    resumed = cli([*argv, "--resume"])
    assert (stopped, resumed) == (128 + signal.SIGTERM, 0), capsys.readouterr().err
    assert "--resume" in err and "nothing saved" not in err
    assert (run_dir / "ppo" / "best.pt").is_file()
    load_policy(run_dir / "final.pt")


def test_a_pipeline_copied_or_moved_elsewhere_resumes_there(tmp_path, monkeypatch, capsys):
    """Issue 52 #16: the stages' paths into the run folder (a start, earlier steps' labels) compare
    relative to it, so a run folder copied or moved elsewhere resumes; other paths are still refused."""
    import shutil

    monkeypatch.chdir(tmp_path)
    argv = ["--quick", "--workers", "1"]
    pipeline_main([*argv, "--run-dir", "first"])  # a relative --run-dir
    (tmp_path / "first" / "improve2" / "stage.json").unlink()  # as if stopped in its last stage
    shutil.copytree(tmp_path / "first", tmp_path / "copy")
    shutil.move(tmp_path / "first", tmp_path / "elsewhere" / "moved")
    capsys.readouterr()
    assert cli([*argv, "--run-dir", str(tmp_path / "elsewhere" / "moved"), "--resume"]) == 0, capsys.readouterr().err
    assert "[3/3] improve2: done in" in capsys.readouterr().out
    load_policy(tmp_path / "elsewhere" / "moved" / "final.pt")
    record = json.loads((tmp_path / "copy" / "pipeline.json").read_text())
    record["stages_planned"]["improve2"]["extra_labels"] = str(tmp_path / "copy" / "improve9")
    (tmp_path / "copy" / "pipeline.json").write_text(json.dumps(record))
    assert cli([*argv, "--run-dir", "copy", "--resume"]) == 2
    assert "improve2 differ" in capsys.readouterr().err


def test_every_planned_stage_is_a_registered_kind_of_stage(tmp_path):
    """The stage registry (``STAGES``) knows every stage a recipe plans: how it runs, is checked,
    described and which file it leaves (the PPO stage its best checkpoint, the others their fit)."""
    from training.pipeline import STAGES, stage_kind

    kinds = set()
    for name in RECIPES:
        recipe = RECIPES[name]
        config = PipelineConfig(rules=recipe.rules, num_players=3 if recipe.rules == "penalty" else 0, recipe=name)
        for stage in stage_configs(config, tmp_path):
            kinds.add(stage.rstrip("0123456789"))
            assert stage_kind(stage) in STAGES.values()
    assert kinds == set(STAGES)
    assert [STAGES[kind].output for kind in ("ppo", "improve", "average")] == ["best.pt", "fitted.pt", "fitted.pt"]
