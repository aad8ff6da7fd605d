"""The one-command pipeline (training.pipeline): every stage in turn, resumable, refusing a mixed-up resume."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from training.pipeline import PENALTY_RECIPE, cli  # noqa: E402
from training.pipeline import main as pipeline_main  # noqa: E402
from training.policy import CheckpointError, load_policy  # noqa: E402


def test_quick_pipeline_runs_every_stage_and_resumes_the_interrupted_one(tmp_path, capsys):
    run_dir = tmp_path / "pipe"
    # (--carry-labels 1: step 2 also fits step 1's labels, at most one earlier step each)
    argv = ["--quick", "--run-dir", str(run_dir), "--workers", "1", "--carry-labels", "1", "--no-progress"]
    record = pipeline_main(argv)
    assert list(record["stages"]) == ["ppo", "improve1", "improve2"]
    assert all(stage["seconds"] > 0 for stage in record["stages"].values())
    assert record["stages"]["improve1"]["summary"]["labelled_decisions"] == 40
    assert record["stages"]["improve2"]["summary"]["labelled_decisions"] == 80
    final = run_dir / "final.pt"
    load_policy(final)  # a policy for play and evaluation
    assert final.read_bytes() == (run_dir / "improve2" / "fitted.pt").read_bytes()
    # improve2 starts from improve1's result, improve1 from the PPO stage's best checkpoint.
    planned = record["stages_planned"]
    assert str(run_dir / "ppo" / "best.pt") in planned["improve1"]
    assert str(run_dir / "improve1" / "fitted.pt") in planned["improve2"]

    # Interrupt the last stage (its marker and one label chunk gone): --resume redoes only that.
    (run_dir / "improve2" / "stage.json").unlink()
    (run_dir / "improve2" / "labels_0001.npz").unlink()
    kept = (run_dir / "improve2" / "labels_0000.npz").stat().st_mtime_ns
    ppo_marker = (run_dir / "ppo" / "stage.json").read_text()
    capsys.readouterr()
    record = pipeline_main([*argv, "--resume"])
    out = capsys.readouterr().out
    assert "[1/3] ppo: finished before, skipped" in out and "[2/3] improve1: finished before, skipped" in out
    assert "resuming: 1 of 2 label chunks" in out
    assert (run_dir / "improve2" / "labels_0000.npz").stat().st_mtime_ns == kept
    assert (run_dir / "ppo" / "stage.json").read_text() == ppo_marker
    assert list(record["stages"]) == ["ppo", "improve1", "improve2"]
    assert json.loads((run_dir / "pipeline.json").read_text())["final"] == str(final)

    # Starting over in the same folder without --resume, or resuming with other budgets, is refused.
    assert cli(argv) == 2
    assert cli([*argv, "--resume", "--seed", "5"]) == 2
    err = capsys.readouterr().err
    assert "add --resume" in err and "other arguments" in err


@pytest.mark.parametrize("flag, value", [("--steps", "200000,0"), ("--steps", "many"), ("--workers", "0"),
                                         ("--eval-matches", "-1"), ("--label-top", "1")])
def test_bad_budgets_are_refused_before_anything_is_written(tmp_path, flag, value, capsys):
    assert cli(["--run-dir", str(tmp_path / "p"), flag, value]) == 2
    assert flag in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_a_run_stopped_in_its_first_stage_is_resumed_with_its_own_arguments(tmp_path, monkeypatch, capsys):
    import training.pipeline as pipeline

    def stopped(*_args, **_kwargs):
        raise pipeline.StageStopped("SIGTERM")

    argv = ["--quick", "--run-dir", str(tmp_path / "p"), "--no-progress"]
    monkeypatch.setattr(pipeline, "run_stage", stopped)
    assert cli(argv) == 130
    assert "--resume" in capsys.readouterr().err
    assert cli(argv) == 2  # not started over by a plain rerun
    assert cli([*argv, "--resume", "--seed", "4"]) == 2  # nor resumed with other arguments
    refusal = capsys.readouterr().err
    assert "other arguments" in refusal and "python -m training.pipeline --quick" in refusal  # it names the run's command


def test_quick_penalty_pipeline_trains_labels_and_fits_at_a_three_player_table(tmp_path):
    run_dir = tmp_path / "pen3"
    record = pipeline_main(["--quick", "--rules", "penalty", "--num-players", "3", "--steps", "100,100",
                            "--run-dir", str(run_dir), "--workers", "1", "--no-progress"])
    planned = record["stages_planned"]
    assert planned["ppo"][planned["ppo"].index("--rules") + 1] == "penalty"
    assert planned["ppo"][planned["ppo"].index("--num-players") + 1] == "3"
    assert planned["ppo"][planned["ppo"].index("--opponent-pool") + 1] == "simple@3 self@1"
    assert list(record["stages"]) == ["ppo", "improve1", "improve2"]
    assert record["stages"]["improve2"]["summary"]["labelled_decisions"] == 40
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
    assert "--num-players 5" in capsys.readouterr().err
    assert cli(["--num-players", "3", "--run-dir", str(tmp_path / "p")]) == 2  # classic is two-player
    assert not (tmp_path / "p").exists()


def test_the_classic_stages_arguments_are_those_of_the_default_and_the_short_recipe(tmp_path):
    # A resume compares the stored argument lists: new options must not change the classic ones.
    from training.pipeline import parse_args, stage_commands

    commands = stage_commands(parse_args(["--no-progress"]), tmp_path)
    assert commands["ppo"] == ("training.train", ["--run-dir", str(tmp_path / "ppo"), "--seed", "1",
                                                  "--total-decisions", "3000000", "--no-progress"])
    # The default recipe: three steps of 800,000 decisions, each fitting the earlier steps' labels too.
    assert list(commands) == ["ppo", "improve1", "improve2", "improve3"]
    assert commands["improve1"] == ("training.improve", [
        "--init-from", str(tmp_path / "ppo" / "best.pt"), "--run-dir", str(tmp_path / "improve1"),
        "--seed", "11", "--decisions", "800000", "--workers", "2", "--eval-matches", "1000", "--no-progress"])
    assert commands["improve2"][1][-3:] == ["--extra-labels", str(tmp_path / "improve1"), "--no-progress"]
    assert commands["improve3"] == ("training.improve", [
        "--init-from", str(tmp_path / "improve2" / "fitted.pt"), "--run-dir", str(tmp_path / "improve3"),
        "--seed", "13", "--decisions", "800000", "--workers", "2", "--eval-matches", "1000",
        "--extra-labels", f"{tmp_path / 'improve2'},{tmp_path / 'improve1'}", "--no-progress"])
    # The short recipe (the shipped file's first two steps) keeps the arguments it always had.
    short = stage_commands(parse_args(["--no-progress", "--steps", "200000,300000"]), tmp_path)
    assert short["improve2"] == ("training.improve", [
        "--init-from", str(tmp_path / "improve1" / "fitted.pt"), "--run-dir", str(tmp_path / "improve2"),
        "--seed", "12", "--decisions", "300000", "--workers", "2", "--eval-matches", "1000", "--no-progress"])
    # A --carry-labels given with the default steps replaces the recipe's.
    alone = stage_commands(parse_args(["--no-progress", "--carry-labels", "0"]), tmp_path)
    assert not any("--extra-labels" in argv for _, argv in alone.values())


def test_outlook_features_reach_the_ppo_stage_and_the_steps_follow_its_checkpoint(tmp_path):
    from training.pipeline import parse_args, stage_commands

    commands = stage_commands(parse_args(["--no-progress", "--outlook-features"]), tmp_path)
    assert commands["ppo"][1][-2:] == ["--outlook-features", "--no-progress"]
    # The improvement steps read the network's inputs from the checkpoint they start from.
    assert "--outlook-features" not in commands["improve1"][1]


def test_label_top_reaches_every_improvement_step_and_not_the_ppo_stage(tmp_path):
    from training.pipeline import parse_args, stage_commands

    commands = stage_commands(parse_args(["--no-progress", "--label-top", "3"]), tmp_path)
    assert "--label-top" not in commands["ppo"][1]
    steps = [name for name in commands if name.startswith("improve")]
    assert len(steps) == 3
    for step in steps:
        argv = commands[step][1]
        assert argv[argv.index("--label-top") + 1] == "3"


def test_the_penalty_recipe_imitates_lookahead_then_improves_on_its_rollouts(tmp_path):
    from training.pipeline import parse_args, stage_commands

    # The shipped files' recipes: at 3 players ten steps (9 and 10 both from step 8) and the average
    # of steps 7 to 10; at 4 players seven steps, the last of 500,000 labels.
    for players, steps, last in (("3", 10, ["average"]), ("4", 7, [])):
        args = parse_args(["--no-progress", "--rules", "penalty", "--num-players", players])
        commands = stage_commands(args, tmp_path)
        assert list(commands) == ["ppo", *(f"improve{k}" for k in range(1, steps + 1)), *last]
        ppo = commands["ppo"][1]
        assert ppo[ppo.index("--bc-teacher") + 1] == "lookahead" and ppo.count("--outlook-features") == 1
        # Imitation alone: the budget is exactly the imitation updates' decisions.
        assert int(ppo[ppo.index("--total-decisions") + 1]) == int(ppo[ppo.index("--bc-updates") + 1]) * 128 * 64
        step = commands["improve1"][1]
        for flag, value in (("--decisions", "100000"), ("--rollout-player", "lookahead"), ("--objective", "policy"),
                            ("--init-from", str(tmp_path / "ppo" / "best.pt"))):
            assert step[step.index(flag) + 1] == value, flag
        for k in range(2, steps + 1):  # its own rollouts
            later = commands[f"improve{k}"][1]
            assert "--rollout-player" not in later and later[later.index("--objective") + 1] == "policy"
            start = 8 if (players, k) == ("3", 10) else k - 1
            assert later[later.index("--init-from") + 1] == str(tmp_path / f"improve{start}" / "fitted.pt")
        decisions = [commands[f"improve{k}"][1][commands[f"improve{k}"][1].index("--decisions") + 1]
                     for k in range(1, steps + 1)]
        assert decisions == (["100000"] * 9 + ["300000"] if players == "3" else ["100000"] * 6 + ["500000"])
    average = stage_commands(parse_args(["--no-progress", "--rules", "penalty", "--num-players", "3"]), tmp_path)["average"]
    assert average == ("training.soup", ["--out", str(tmp_path / "average" / "fitted.pt"),
                                         *(str(tmp_path / f"improve{k}" / "fitted.pt") for k in (7, 8, 9, 10))])
    one_step = stage_commands(parse_args(["--no-progress", "--rules", "penalty", "--steps", "5000"]), tmp_path)
    assert list(one_step) == ["ppo", "improve1"] and "lookahead" in one_step["improve1"][1]
    assert parse_args(["--no-progress"]).steps == "800000,800000,800000"  # classic keeps its steps
    classic = stage_commands(parse_args(["--no-progress", "--rollout-player", "simple", "--objective", "policy"]), tmp_path)
    step = classic["improve2"][1]
    assert step[step.index("--rollout-player") + 1] == "simple" and step[step.index("--objective") + 1] == "policy"


TWO_STEPS = ["--steps", "10,10"]  # per-step values below name two steps, whatever the default recipe


def test_a_rollout_player_per_step_reaches_its_own_step(tmp_path):
    from training.pipeline import parse_args, stage_commands

    commands = stage_commands(parse_args(["--no-progress", *TWO_STEPS, "--rollout-player", "simple/policy"]), tmp_path)
    first, second = commands["improve1"][1], commands["improve2"][1]
    assert first[first.index("--rollout-player") + 1] == "simple"
    assert "--rollout-player" not in second  # policy: training.improve's default
    spec = "lookahead/search:rollouts=8,max_discards=3"
    settings = stage_commands(parse_args(["--no-progress", *TWO_STEPS, "--rollout-player", spec]), tmp_path)["improve2"][1]
    assert settings[settings.index("--rollout-player") + 1] == "search:rollouts=8,max_discards=3"


def test_carried_labels_name_the_latest_earlier_steps(tmp_path):
    from training.pipeline import parse_args, stage_commands

    def extras(argv):
        commands = stage_commands(parse_args(["--no-progress", "--steps", "10,10,10,10", *argv]), tmp_path)
        return [command[command.index("--extra-labels") + 1] if "--extra-labels" in command else ""
                for name, (_, command) in commands.items() if name != "ppo"]

    assert extras([]) == ["", "", "", ""]  # --steps given: each step fits its own labels unless told
    assert extras(["--carry-labels", "0/0/0/1"]) == ["", "", "", str(tmp_path / "improve3")]
    assert extras(["--carry-labels", "2"]) == [
        "", str(tmp_path / "improve1"), f"{tmp_path / 'improve2'},{tmp_path / 'improve1'}",
        f"{tmp_path / 'improve3'},{tmp_path / 'improve2'}"]


def test_a_fit_target_per_step_reaches_its_own_step(tmp_path):
    from training.pipeline import parse_args, stage_commands

    commands = stage_commands(parse_args(["--no-progress", *TWO_STEPS, "--fit-target", "label/match"]), tmp_path)
    first, second = commands["improve1"][1], commands["improve2"][1]
    assert "--fit-target" not in first  # label: training.improve's default
    assert second[second.index("--fit-target") + 1] == "match"
    every = stage_commands(parse_args(["--no-progress", *TWO_STEPS, "--fit-target", "match"]), tmp_path)
    assert all(every[f"improve{k}"][1].count("match") == 1 for k in (1, 2))
    # Every preset's steps fit the labels unless told otherwise (the shipped recipes' arguments).
    for argv in (["--no-progress"], ["--no-progress", "--rules", "penalty", "--num-players", "4"]):
        default = stage_commands(parse_args(argv), tmp_path)
        assert not any("--fit-target" in command for _, command in default.values())


PENALTY_STEPS_3 = len(PENALTY_RECIPE[3].steps.split(","))


@pytest.mark.parametrize("flag, value, why", [("--fit-target", "wins", "not one of label, match"),
                                              ("--fit-target", "label/match", "one per step"),
                                              ("--rollout-player", "aggressor", "held-out"),
                                              ("--rollout-player", "nonsense", "unknown player"),
                                              ("--rollout-player", "simple/policy", "one per step"),
                                              ("--rollout-player",
                                               "simple/aggressor" + "/policy" * (PENALTY_STEPS_3 - 2), "held-out"),
                                              ("--objective", "imitate", "allowed: regress, policy"),
                                              ("--carry-labels", "1/1" + "/0" * (PENALTY_STEPS_3 - 2),
                                               "step 1 can add the labels of 0 to 0 earlier steps, not '1'"),
                                              ("--carry-labels", "-1", "not '-1'"),
                                              ("--carry-labels", "0/1", "one per step"),
                                              ("--step-from", "0/2" + "/0" * (PENALTY_STEPS_3 - 2),
                                               "step 2 can start from 0 (the first stage) to 1"),
                                              ("--step-from", "0/0", "one per step"),
                                              ("--average", "3", "two or more different steps"),
                                              ("--average", "3,3", "two or more different steps"),
                                              ("--average", f"1,{PENALTY_STEPS_3 + 1}", f"1 to {PENALTY_STEPS_3}")])
def test_bad_step_options_are_refused_before_anything_is_written(tmp_path, flag, value, why, capsys):
    run_dir = tmp_path / "p"
    assert cli(["--rules", "penalty", "--num-players", "3", flag, value, "--run-dir", str(run_dir)]) == 2
    assert why in capsys.readouterr().err and not run_dir.exists()


def test_steps_0_runs_ppo_alone_and_ships_its_best_checkpoint(tmp_path):
    """``--steps 0``: the first stage alone, its best checkpoint shipped."""
    import torch

    run_dir = tmp_path / "p"
    argv = ["--quick", "--rules", "penalty", "--num-players", "3", "--outlook-features", "--steps", "0",
            "--run-dir", str(run_dir), "--no-progress"]
    assert cli(argv) == 0
    record = json.loads((run_dir / "pipeline.json").read_text())
    assert list(record["stages"]) == ["ppo"]
    final = torch.load(run_dir / "final.pt", weights_only=True)
    assert final["metadata"]["outlook_features"] is True and final["metadata"]["num_players"] == 3
    assert (run_dir / "final.pt").read_bytes() == (run_dir / "ppo" / "best.pt").read_bytes()


def test_steps_can_start_from_an_earlier_stage_and_the_final_file_averages_the_named_steps(tmp_path):
    """``--step-from`` and ``--average``: two steps from the PPO stage, their weight average shipped."""
    from training.soup import average_checkpoints

    run_dir = tmp_path / "p"
    record = pipeline_main(["--quick", "--steps", "1,1", "--step-from", "0/0", "--average", "1,2",
                            "--run-dir", str(run_dir), "--workers", "1", "--no-progress"])
    planned = record["stages_planned"]
    assert list(record["stages"]) == ["ppo", "improve1", "improve2", "average"]
    for step in ("improve1", "improve2"):  # both from the first stage, each with its own seed and labels
        assert planned[step][planned[step].index("--init-from") + 1] == str(run_dir / "ppo" / "best.pt")
    assert record["stages"]["improve2"]["summary"]["labelled_decisions"] == 40
    fitted = [run_dir / f"improve{k}" / "fitted.pt" for k in (1, 2)]
    import torch

    final = torch.load(run_dir / "final.pt", weights_only=True)
    expected = average_checkpoints(fitted)
    assert all(torch.equal(final["model"][name], tensor) for name, tensor in expected["model"].items())
    assert [source["path"] for source in final["metadata"]["averaged_from"]] == [str(path) for path in fitted]
    load_policy(run_dir / "final.pt")
