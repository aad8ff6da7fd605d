"""Batched decision labelling (training.labelling) gives exactly the unbatched path's labels."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("torch")

from training.improve import label_decisions  # noqa: E402
from training.labelling import LABEL_KEYS, OUTCOME_KEYS, label_decisions_batched  # noqa: E402

JOB_KEYS = (*LABEL_KEYS, *OUTCOME_KEYS)  # everything a job writes

CLASSIC = "checkpoints/okgin_classic.pt"


@pytest.mark.parametrize("checkpoint, rules, seed", [
    (CLASSIC, "classic", 5),
    (CLASSIC, "classic", 6),
    ("checkpoints/okgin_classic_ppo.pt", "classic", 7),
    ("checkpoints/okgin_penalty_3p.pt", "penalty", 8),  # stock reshuffles: each rollout its own generator
    ("checkpoints/okgin_penalty_4p.pt", "penalty", 9),
])
@pytest.mark.parametrize("rollout_batch", [1, 5, 1024])  # 5: rollouts of both learner seats refill a small pool
def test_batched_labels_are_identical_to_the_single_rollout_labels(checkpoint, rules, seed, rollout_batch):
    job = (checkpoint, rules, seed, 12)
    single = label_decisions(job)
    batched = label_decisions_batched(job, rollout_batch=rollout_batch)
    assert sorted(batched) == sorted(JOB_KEYS) == sorted(single)
    for key in JOB_KEYS:
        assert batched[key].dtype == single[key].dtype and batched[key].shape == single[key].shape, key
        np.testing.assert_array_equal(batched[key], single[key], err_msg=key)
    # The labels are real round points of real rollouts: they vary across a decision's actions.
    assert batched["q"].shape[0] == 12
    legal = batched["legal"]
    spread = np.where(legal, batched["q"], -np.inf).max(1) - np.where(legal, batched["q"], np.inf).min(1)
    assert np.any(spread > 0)


@pytest.mark.parametrize("num_players", [3, 4])
def test_a_penalty_policy_labels_tables_of_its_own_player_count(num_players):
    labels = label_decisions_batched((f"checkpoints/okgin_penalty_{num_players}p.pt", "penalty", 4, 3))
    from okgin_env.observation import layout_for

    assert labels["obs"].shape == (3, layout_for(num_players).size)


def test_another_seed_gives_other_labels():
    a = label_decisions_batched((CLASSIC, "classic", 5, 6))
    b = label_decisions_batched((CLASSIC, "classic", 8, 6))
    assert not np.array_equal(a["obs"], b["obs"])


def test_rollout_batch_must_be_positive():
    with pytest.raises(ValueError, match="rollout_batch must be at least 1"):
        label_decisions_batched((CLASSIC, "classic", 5, 2), rollout_batch=0)


def test_improve_resumes_labelling_from_the_chunks_written_before(tmp_path):
    from training.improve import main as improve_main

    common = ["--init-from", CLASSIC, "--decisions", "12", "--chunk", "4", "--workers", "1", "--epochs", "1",
              "--eval-matches", "0", "--no-progress", "--seed", "3"]
    first, second = tmp_path / "first", tmp_path / "second"
    improve_main([*common, "--run-dir", str(first)])
    improve_main([*common, "--run-dir", str(second), "--labelling", "single"])
    chunks = sorted(p.name for p in first.glob("labels_*.npz"))
    assert chunks == ["labels_0000.npz", "labels_0001.npz", "labels_0002.npz"]
    for name in chunks:  # batched and single labelling wrote the same labels
        with np.load(first / name) as a, np.load(second / name) as b:
            for key in JOB_KEYS:
                np.testing.assert_array_equal(a[key], b[key])
    # An interrupted run: one chunk missing and one kept but stale-looking by time stamp only.
    kept = (first / "labels_0000.npz").stat().st_mtime_ns
    (first / "labels_0001.npz").unlink()
    improve_main([*common, "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns == kept  # not labelled again
    with np.load(first / "labels_0001.npz") as a, np.load(second / "labels_0001.npz") as b:
        np.testing.assert_array_equal(a["q"], b["q"])  # the missing chunk, labelled again, is the same
    # The same checkpoint from another path (a copy, a clone) resumes too: the manifest records its bytes' hash,
    # and a manifest of the older kind, which recorded the path, is recognised by the file's bytes.
    import json
    import shutil

    copy = tmp_path / "copy.pt"
    shutil.copyfile(CLASSIC, copy)
    moved = [*common[:1], str(copy), *common[2:]]
    improve_main([*moved, "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns == kept
    manifest = json.loads((first / "labels.json").read_text())
    assert manifest["init_from"].startswith("sha256:")
    (first / "labels.json").write_text(json.dumps({**manifest, "init_from": str(copy)}))
    improve_main([*common, "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns == kept
    # Other arguments: the old chunks are not the labels asked for and are labelled afresh.
    improve_main([*common[:-1], "4", "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns != kept
    assert not list(first.glob("partial_*"))


def test_a_job_may_carry_the_checkpoint_bytes_instead_of_its_path():
    """What a Ray job sends to a node that does not have the file: the same labels."""
    from pathlib import Path

    from training.improve import label_decisions

    data = Path(CLASSIC).read_bytes()
    by_path = label_decisions_batched((CLASSIC, "classic", 5, 4))
    for labels in (label_decisions_batched((data, "classic", 5, 4)), label_decisions((data, "classic", 5, 4))):
        for key in JOB_KEYS:
            np.testing.assert_array_equal(labels[key], by_path[key])


def test_improve_cli_exits_2_with_a_message(tmp_path, capsys):
    from training.improve import cli

    assert cli(["--init-from", str(tmp_path / "missing.pt"), "--run-dir", str(tmp_path / "r")]) == 2
    assert "missing.pt" in capsys.readouterr().err
    assert cli(["--decisions", "0", "--run-dir", str(tmp_path / "r")]) == 2


# ----------------------------------------------------------------------------- truncated rollouts (--rollout-depth)

PPO = "checkpoints/okgin_classic_ppo.pt"


@pytest.mark.parametrize("depth", [1, 3])
def test_truncated_labels_agree_between_the_batched_and_single_paths(depth):
    job = (PPO, "classic", 7, 12, {"depth": depth})
    single, batched = label_decisions(job), label_decisions_batched(job)
    for key in JOB_KEYS:
        if key == "q":
            # The value head's outputs from a batched matrix product may differ in the last bits.
            np.testing.assert_allclose(batched[key], single[key], rtol=0, atol=1e-4)
        else:
            np.testing.assert_array_equal(batched[key], single[key], err_msg=key)
    full = label_decisions_batched((PPO, "classic", 7, 12))
    # The same decisions as the whole-round labels (the main line does not depend on the labels),
    # labelled otherwise: estimates are not whole points.
    np.testing.assert_array_equal(batched["obs"], full["obs"])
    assert not np.array_equal(batched["q"], full["q"])
    legal_q = batched["q"][batched["legal"]]
    assert np.any(legal_q != np.round(legal_q))


def test_a_depth_no_round_reaches_gives_the_whole_round_labels():
    """The truncation only fires at the learner's depth-th choice: past any round's end, nothing changes."""
    deep = label_decisions_batched((PPO, "classic", 7, 12, {"depth": 1000}))
    full = label_decisions_batched((PPO, "classic", 7, 12))
    for key in JOB_KEYS:
        np.testing.assert_array_equal(deep[key], full[key], err_msg=key)


def plain_loop_labels(checkpoint: str, rules: str, seed: int, count: int, play_out,
                      opponent: str = "simple") -> list[list[float]]:
    """The labels of a job, recomputed by a plain loop: the job's matches (``play_learner_matches``
    with the job's generator, ``opponent`` in the other seats), and for each decision every
    action applied to a clone of the round, then ``play_out(player, state, scores, learner,
    tie_seed)`` gives its label."""
    import torch

    from training.improve import _Player
    from training.labelling import label_opponent, play_learner_matches

    player = _Player(checkpoint, rules)
    rng = random.Random(seed)
    opponent = label_opponent(opponent, player.policy, rng, player.config)
    expected = []

    def label(match, learner, observation, encoded):
        tie_seed = rng.getrandbits(32)
        row = []
        for action in encoded[-1]:
            state = match.round.clone()
            state.apply_unchecked(action)
            row.append(play_out(player, state, match.scores, learner, tie_seed))
        expected.append(row)

    with torch.no_grad():
        play_learner_matches(player.config, player.policy, opponent, seed, count, label)
    return expected


def test_truncated_labels_are_the_value_heads_estimate_at_the_next_choice():
    """Depth 1: each label is the round's points if it ended before the learner's next choice, else the
    value head times the PPO run's reward scale at that choice, recomputed here from a plain loop."""
    from training.labelling import value_scale
    from okgin_env.bots.simple import simple_action_for_state

    labels = label_decisions_batched((PPO, "classic", 7, 6, {"depth": 1}))
    scale = value_scale(PPO)
    assert scale == 25.0

    def play_out(player, state, scores, learner, tie_seed):
        tie_rng = random.Random(tie_seed)
        while not state.is_over and not (state.current == learner and len(state.legal_actions()) > 1):
            if state.current == learner:
                state.apply_unchecked(state.legal_actions()[0])
            else:
                state.apply_unchecked(simple_action_for_state(state, tie_rng))
        if state.is_over:
            return state.outcome.rewards[learner]
        return player.value(state, scores, learner) * scale

    expected = plain_loop_labels(PPO, "classic", 7, 6, play_out)
    for q, legal, row in zip(labels["q"], labels["legal"], expected):
        np.testing.assert_allclose(q[legal], row, rtol=0, atol=1e-4)


def test_truncated_rollouts_are_refused_where_they_cannot_be_estimated(tmp_path, capsys):
    from training.improve import cli
    from training.labelling import unpack_job, value_scale

    with pytest.raises(ValueError, match="rollout depth -1"):
        unpack_job((PPO, "classic", 1, 1, {"depth": -1}))
    with pytest.raises(ValueError, match="needs the label reward 'points'"):
        unpack_job(("checkpoints/okgin_penalty_3p.pt", "penalty", 1, 1, {"reward": "own_penalty", "depth": 2}))
    with pytest.raises(ValueError, match="value head its fit did not train"):
        value_scale(CLASSIC)  # made by training.improve
    run_dir = tmp_path / "r"
    assert cli(["--init-from", CLASSIC, "--rollout-depth", "2", "--run-dir", str(run_dir)]) == 2
    assert "value head" in capsys.readouterr().err
    assert cli(["--init-from", PPO, "--rollout-depth", "-1", "--run-dir", str(run_dir)]) == 2
    assert "--rollout-depth" in capsys.readouterr().err
    assert not run_dir.exists()  # a refused run writes nothing


def test_improve_labels_with_a_rollout_depth_and_records_it(tmp_path):
    import json

    from training.improve import main as improve_main

    run_dir = tmp_path / "depth"
    improve_main(["--init-from", PPO, "--decisions", "4", "--chunk", "4", "--workers", "1", "--epochs", "1",
                  "--eval-matches", "0", "--no-progress", "--seed", "3", "--rollout-depth", "2",
                  "--run-dir", str(run_dir)])
    assert json.loads((run_dir / "labels.json").read_text())["rollout_depth"] == 2
    with np.load(run_dir / "labels_0000.npz") as chunk:
        expected = label_decisions_batched((PPO, "classic", 3 * 100_000, 4, {"depth": 2}))
        np.testing.assert_array_equal(chunk["q"], expected["q"])


# ----------------------------------------------------------------------------- the policy's top actions only (--label-top)


@pytest.mark.parametrize("checkpoint, rules, top", [(CLASSIC, "classic", 2), (PPO, "classic", 3),
                                                   ("checkpoints/okgin_penalty_3p.pt", "penalty", 2)])
def test_top_labels_are_the_whole_labels_of_the_policys_best_scored_actions(checkpoint, rules, top):
    import torch

    from training.policy import load_policy

    job = (checkpoint, rules, 5, 16, {"top": top})
    single, batched = label_decisions(job), label_decisions_batched(job)
    assert sorted(single) == sorted(batched) == sorted((*JOB_KEYS, "labelled"))
    for key in single:
        np.testing.assert_array_equal(batched[key], single[key], err_msg=key)
    full = label_decisions_batched((checkpoint, rules, 5, 16))
    for key in LABEL_KEYS[:-1]:  # the same decisions
        np.testing.assert_array_equal(batched[key], full[key], err_msg=key)
    chosen = batched["labelled"]
    # The labelled actions' labels are exactly the whole run's (each action keeps its own rollout).
    np.testing.assert_array_equal(batched["q"], np.where(chosen, full["q"], 0))
    legal_count = batched["legal"].sum(1)
    np.testing.assert_array_equal(chosen.sum(1), np.minimum(legal_count, top))
    assert not np.any(chosen & ~batched["legal"])
    assert np.any(legal_count > top)  # some decisions did leave actions out
    # ... and those left out are never among the policy's best-scored ones.
    policy = load_policy(checkpoint, rules=None)
    with torch.no_grad():
        logits, _ = policy.model(*(torch.from_numpy(batched[k]) for k in ("obs", "ctx", "feat", "ids", "legal")))
    logits = logits.numpy()
    for row in range(len(logits)):
        kept = logits[row][chosen[row]].min()
        dropped = logits[row][batched["legal"][row] & ~chosen[row]]
        assert dropped.size == 0 or dropped.max() <= kept


def test_the_fit_compares_only_the_labelled_actions():
    import torch

    from training.improve import agreement, chosen_points, fit_loss
    from training.policy import load_policy

    labels = label_decisions_batched((CLASSIC, "classic", 5, 16, {"top": 2}))
    batch = {k: torch.from_numpy(v) for k, v in labels.items()}
    model = load_policy(CLASSIC).model
    poisoned = dict(batch, q=torch.where(batch["labelled"], batch["q"], torch.full_like(batch["q"], 1000.0)))
    for objective in ("regress", "policy", "imitate"):
        assert fit_loss(model, poisoned, 2.0, objective).item() == pytest.approx(fit_loss(model, batch, 2.0, objective).item())
    assert torch.equal(chosen_points(model, poisoned), chosen_points(model, batch))
    assert agreement(model, poisoned) == agreement(model, batch)
    # Without the labelled flags the same labels would be read as every legal action's: not the same loss.
    unflagged = {k: v for k, v in poisoned.items() if k != "labelled"}
    assert fit_loss(model, unflagged, 2.0).item() != pytest.approx(fit_loss(model, batch, 2.0).item())


def test_label_top_is_checked_and_recorded(tmp_path, capsys):
    import json

    from training.improve import cli, main as improve_main
    from training.labelling import unpack_job

    for bad in ({"top": 1}, {"top": -2}, {"depth": True}, {"colour": 3}):
        with pytest.raises(ValueError, match="allowed"):
            unpack_job((CLASSIC, "classic", 1, 1, bad))
    with pytest.raises(ValueError, match="4 or 5 entries"):
        unpack_job((CLASSIC, "classic", 1, 1, "points", 2))
    refused = tmp_path / "refused"
    assert cli(["--label-top", "1", "--run-dir", str(refused)]) == 2
    assert "--label-top" in capsys.readouterr().err and not refused.exists()
    run_dir = tmp_path / "top"
    improve_main(["--init-from", CLASSIC, "--decisions", "8", "--chunk", "4", "--workers", "1", "--epochs", "1",
                  "--eval-matches", "0", "--no-progress", "--seed", "3", "--label-top", "2", "--run-dir", str(run_dir)])
    assert json.loads((run_dir / "labels.json").read_text())["label_top"] == 2
    with np.load(run_dir / "labels_0001.npz") as chunk:
        expected = label_decisions_batched((CLASSIC, "classic", 3 * 100_000 + 1, 4, {"top": 2}))
        for key in expected:
            np.testing.assert_array_equal(chunk[key], expected[key], err_msg=key)


def test_the_labelling_benchmark_runs_every_path_it_offers(tmp_path, monkeypatch):
    """benchmarks/bench_labelling.py end to end on a tiny job (the numbers are its business; here: it runs)."""
    import importlib.util
    import json
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_labelling.py"
    spec = importlib.util.spec_from_file_location("bench_labelling", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "labelling.json"
    monkeypatch.setattr(sys, "argv", ["bench_labelling.py", "--checkpoint", PPO, "--decisions", "2", "--repeats", "1",
                                      "--rollout-depths", "1", "--label-tops", "2", "--json", str(out)])
    module.main()
    result = json.loads(out.read_text())
    assert set(result["ms_per_labelled_decision"]) == {"single", "batched", "batched_depth_1", "batched_top_2"}
    assert result["identical_labels"] is True


# ----------------------------------------------------------------------------- simple in the learner's seat (--rollout-player simple)


@pytest.mark.parametrize("checkpoint, rules, seed", [(CLASSIC, "classic", 5), ("checkpoints/okgin_penalty_3p.pt", "penalty", 8)])
def test_simple_rollout_labels_agree_between_paths_and_with_a_plain_loop(checkpoint, rules, seed):
    """``rollout: simple``: the batched and single paths give the same arrays, the same decisions as the
    policy's rollouts (the main line is the policy's either way), and each label is the round of a
    plain loop where ``simple`` plays every seat from the action on, with the decision's tie seed."""
    from okgin_env.bots.simple import simple_action_for_state

    job = (checkpoint, rules, seed, 8, {"rollout": "simple"})
    batched = label_decisions_batched(job)
    single = label_decisions(job)
    policy_rollouts = label_decisions_batched(job[:4])
    for key in JOB_KEYS:
        np.testing.assert_array_equal(batched[key], single[key], err_msg=key)
        if key not in ("q", "round_points"):  # what the rollouts played
            np.testing.assert_array_equal(batched[key], policy_rollouts[key], err_msg=key)
    assert not np.array_equal(batched["q"], policy_rollouts["q"])

    def play_out(player, state, scores, learner, tie_seed):
        tie_rng = random.Random(tie_seed)
        while not state.is_over:
            state.apply_unchecked(simple_action_for_state(state, tie_rng))
        return state.outcome.rewards[learner]

    expected = plain_loop_labels(checkpoint, rules, seed, 8, play_out)
    for q, legal, row in zip(batched["q"], batched["legal"], expected):
        np.testing.assert_array_equal(q[legal], np.array(row, dtype=np.float32))


@pytest.mark.parametrize("checkpoint, rules, seed", [(CLASSIC, "classic", 5), ("checkpoints/okgin_penalty_3p.pt", "penalty", 8)])
def test_bot_rollout_labels_agree_between_paths_and_with_a_plain_loop(checkpoint, rules, seed):
    """``rollout: lookahead``: the bot, seeded with the decision's tie seed, plays the learner's seat from
    its observation; ``simple`` the others with the tie seed's generator."""
    from okgin_env.bots import make_bot
    from okgin_env.bots.simple import simple_action_for_state
    from okgin_env.observation import encode

    job = (checkpoint, rules, seed, 6, {"rollout": "lookahead"})
    batched = label_decisions_batched(job)
    single = label_decisions(job)
    for key in JOB_KEYS:
        np.testing.assert_array_equal(batched[key], single[key], err_msg=key)
    assert not np.array_equal(batched["q"], label_decisions_batched(job[:4] + ({"rollout": "simple"},))["q"])

    def play_out(player, state, scores, learner, tie_seed):
        tie_rng = random.Random(tie_seed)
        bot = make_bot("lookahead", seed=tie_seed)
        while not state.is_over:
            if state.current != learner:
                state.apply_unchecked(simple_action_for_state(state, tie_rng))
            elif len(state.legal_actions()) == 1:
                state.apply_unchecked(state.legal_actions()[0])
            else:
                observation = encode(state, scores, player.config.target_score, learner)
                state.apply_unchecked(bot.act({"observation": observation, "action_mask": state.legal_mask()}))
        return state.outcome.rewards[learner]

    expected = plain_loop_labels(checkpoint, rules, seed, 6, play_out)
    for q, legal, row in zip(batched["q"], batched["legal"], expected):
        np.testing.assert_array_equal(q[legal], np.array(row, dtype=np.float32))


# ----------------------------------------------------------------------------- the policy in the other seats (--label-opponent policy)


@pytest.mark.parametrize("checkpoint, rules, seed", [(CLASSIC, "classic", 5), ("checkpoints/okgin_penalty_3p.pt", "penalty", 8)])
def test_self_play_labels_agree_between_paths_and_with_a_plain_loop(checkpoint, rules, seed):
    """``opponent: policy``: the policy plays every seat, at the matches' tables and in the rollouts;
    the batched and single paths give the same arrays, and each label is the round of a plain loop
    where the policy (greedy, from each seat's observation) plays every seat from the action on."""
    job = (checkpoint, rules, seed, 6, {"opponent": "policy"})
    batched = label_decisions_batched(job)
    single = label_decisions(job)
    for key in JOB_KEYS:
        np.testing.assert_array_equal(batched[key], single[key], err_msg=key)
    # Other matches than against simple: the decisions themselves differ.
    assert not np.array_equal(batched["obs"], label_decisions_batched(job[:4])["obs"])

    def play_out(player, state, scores, learner, tie_seed):
        while not state.is_over:
            state.apply_unchecked(player.action(state, scores, state.current))
        return state.outcome.rewards[learner]

    expected = plain_loop_labels(checkpoint, rules, seed, 6, play_out, opponent="policy")
    for q, legal, row in zip(batched["q"], batched["legal"], expected):
        np.testing.assert_array_equal(q[legal], np.array(row, dtype=np.float32))


# ----------------------------------------------------------------------------- a bot in the other seats (--label-opponent lookahead)


@pytest.mark.parametrize("checkpoint, rules, seed", [(CLASSIC, "classic", 6), ("checkpoints/okgin_penalty_3p.pt", "penalty", 9)])
def test_bot_opponent_labels_agree_between_paths_and_with_a_plain_loop(checkpoint, rules, seed):
    """``opponent: lookahead``: the bot plays every other seat, at the matches' tables and in the
    rollouts (one instance per rollout, seeded with the label's tie seed); the batched and single
    paths give the same arrays, and each label is the round of a plain loop with the policy in the
    learner's seat and a fresh ``LookaheadBot(seed=tie_seed)`` in the others."""
    from okgin_env.bots.lookahead import LookaheadBot
    from okgin_env.observation import encode

    job = (checkpoint, rules, seed, 6, {"opponent": "lookahead"})
    batched = label_decisions_batched(job)
    single = label_decisions(job)
    for key in JOB_KEYS:
        np.testing.assert_array_equal(batched[key], single[key], err_msg=key)
    assert not np.array_equal(batched["obs"], label_decisions_batched(job[:4])["obs"])  # other matches

    def play_out(player, state, scores, learner, tie_seed):
        bot = LookaheadBot(seed=tie_seed)
        while not state.is_over:
            legal = state.legal_actions()
            if state.current == learner:
                state.apply_unchecked(player.action(state, scores, learner))
            elif len(legal) == 1:
                state.apply_unchecked(legal[0])
            else:
                observation = encode(state, scores, player.config.target_score, state.current)
                state.apply_unchecked(bot.act({"observation": observation, "action_mask": state.legal_mask()}))
        return state.outcome.rewards[learner]

    expected = plain_loop_labels(checkpoint, rules, seed, 6, play_out, opponent="lookahead")
    for q, legal, row in zip(batched["q"], batched["legal"], expected):
        np.testing.assert_array_equal(q[legal], np.array(row, dtype=np.float32))


def test_bot_opponent_with_a_bot_rollout_player_agrees_between_paths():
    """Bots in every seat of the rollouts (``rollout: simple``, ``opponent: lookahead``): no network
    in the rollouts, the same labels on both paths."""
    job = (CLASSIC, "classic", 4, 5, {"opponent": "lookahead", "rollout": "simple"})
    batched, single = label_decisions_batched(job), label_decisions(job)
    for key in JOB_KEYS:
        np.testing.assert_array_equal(batched[key], single[key], err_msg=key)


def test_label_opponent_is_checked_and_recorded(tmp_path, capsys):
    from training.improve import cli
    from training.labelling import unpack_job

    with pytest.raises(ValueError, match="label opponent 3; allowed: simple, policy or a bot spec"):
        unpack_job((CLASSIC, "classic", 1, 1, {"opponent": 3}))
    with pytest.raises(ValueError, match="use the rollout player 'policy' with it"):
        unpack_job((CLASSIC, "classic", 1, 1, {"opponent": "policy", "rollout": "simple"}))
    refused = tmp_path / "refused"
    assert cli(["--init-from", CLASSIC, "--label-opponent", "policy", "--rollout-player", "simple",
                "--run-dir", str(refused)]) == 2
    assert "rollout player 'policy'" in capsys.readouterr().err and not refused.exists()
    for bad, why in (("aggressor", "held-out bots"), ("search:time_limit=0.1", "time_limit"),
                     ("nonsense", "unknown player"), ("lookahead:colour=3", "colour")):
        with pytest.raises(ValueError, match=why):
            label_decisions_batched((CLASSIC, "classic", 1, 1, {"opponent": bad}))
        with pytest.raises(ValueError, match=why):
            label_decisions((CLASSIC, "classic", 1, 1, {"opponent": bad}))
        assert cli(["--init-from", CLASSIC, "--label-opponent", bad, "--run-dir", str(refused)]) == 2
        assert why in capsys.readouterr().err and not refused.exists()
    assert_option_recorded(tmp_path / "self", "--label-opponent", "policy", "label_opponent", "opponent")
    assert_option_recorded(tmp_path / "bot", "--label-opponent", "lookahead", "label_opponent", "opponent")


def assert_option_recorded(run_dir, flag: str, value: str, manifest_key: str, job_key: str) -> None:
    """A 4-decision ``training.improve`` run with ``flag value`` records it in ``labels.json`` and
    writes the labels of a job with that option."""
    import json

    from training.improve import main as improve_main

    improve_main(["--init-from", CLASSIC, "--decisions", "4", "--chunk", "4", "--workers", "1", "--epochs", "1",
                  "--eval-matches", "0", "--no-progress", "--seed", "3", flag, value, "--run-dir", str(run_dir)])
    assert json.loads((run_dir / "labels.json").read_text())[manifest_key] == value
    with np.load(run_dir / "labels_0000.npz") as chunk:
        expected = label_decisions_batched((CLASSIC, "classic", 3 * 100_000, 4, {job_key: value}))
        np.testing.assert_array_equal(chunk["q"], expected["q"])


def test_rollout_player_is_checked_and_recorded(tmp_path, capsys):
    from training.improve import cli
    from training.labelling import unpack_job

    with pytest.raises(ValueError, match="rollout player 3; allowed: policy or a bot spec"):
        unpack_job((CLASSIC, "classic", 1, 1, {"rollout": 3}))
    for bad, why in (("aggressor", "held-out bots"), ("search:time_limit=0.1", "time_limit"),
                     ("nonsense", "unknown player"), ("lookahead:colour=3", "colour")):
        with pytest.raises(ValueError, match=why):
            label_decisions_batched((CLASSIC, "classic", 1, 1, {"rollout": bad}))
        assert cli(["--init-from", CLASSIC, "--rollout-player", bad, "--run-dir", str(tmp_path / "bad")]) == 2
        assert why in capsys.readouterr().err and not (tmp_path / "bad").exists()
    with pytest.raises(ValueError, match="needs the rollout player 'policy'"):
        unpack_job((PPO, "classic", 1, 1, {"rollout": "simple", "depth": 2}))
    refused = tmp_path / "refused"
    assert cli(["--init-from", PPO, "--rollout-player", "simple", "--rollout-depth", "2",
                "--run-dir", str(refused)]) == 2
    assert "rollout player" in capsys.readouterr().err and not refused.exists()
    assert_option_recorded(tmp_path / "simple", "--rollout-player", "simple", "rollout_player", "rollout")
