"""Decision labelling (training.labelling) against a plain loop that plays each rollout alone, and
the improvement step's labelling runs (chunks, resume, errors)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from okgin_env.bots import make_bot  # noqa: E402
from okgin_env.bots.simple import SimpleBot, simple_action_for_state  # noqa: E402
from okgin_env.episode import seat_observation  # noqa: E402
from training.labelling import LABEL_KEYS, label_decisions, labelling_config, play_learner_matches  # noqa: E402
from training.policy import load_policy  # noqa: E402

pytestmark = pytest.mark.long  # one of the default suite's long modules: -m "not slow and not long" skips it

CLASSIC = "checkpoints/okgin_classic.pt"
TABLES = [
    (CLASSIC, "classic", 5),
    ("checkpoints/okgin_classic_ppo.pt", "classic", 7),
    ("checkpoints/okgin_penalty_3p.pt", "penalty", 8),  # stock reshuffles: each rollout its own generator
    ("checkpoints/okgin_penalty_4p.pt", "penalty", 9),
]


def plain_loop_labels(checkpoint: str, rules: str, seed: int, count: int, learner_player) -> list[list[float]]:
    """The labels of a job, recomputed one rollout at a time: the job's matches (the policy against
    ``simple`` drawing from the job's generator), and for each decision every action applied to a
    clone of the round, played out with ``learner_player(policy, tie_seed)`` in the learner's seat
    (``act(state, scores, seat)``) and ``simple`` with the tie seed's generator in the others."""
    config = labelling_config(checkpoint, rules)
    policy = load_policy(checkpoint, rules=config, suit_symmetric=False)  # as labelling plays it
    rng = random.Random(seed)
    opponent = SimpleBot()
    opponent.rng = rng
    expected = []

    def label(match, learner, observation, encoded):
        tie_seed = rng.getrandbits(32)
        row = []
        for action in encoded[-1]:
            state = match.round.clone()
            state.apply_unchecked(action)
            tie_rng, player = random.Random(tie_seed), learner_player(policy, tie_seed)
            while not state.is_over:
                legal = state.legal_actions()
                if state.current != learner:
                    state.apply_unchecked(simple_action_for_state(state, tie_rng))
                elif len(legal) == 1:
                    state.apply_unchecked(legal[0])
                else:
                    state.apply_unchecked(player(state, match.scores, learner, tie_rng))
            row.append(state.outcome.rewards[learner])
        expected.append(row)

    play_learner_matches(config, policy, opponent, seed, count, label)
    return expected


def greedy_policy(policy, _tie_seed):
    return lambda state, scores, seat, _rng: policy.act(
        seat_observation(state, scores, state.config.target_score, seat, to_act=True))


def assert_labels_equal(labels: dict, expected: list[list[float]]) -> None:
    assert len(expected) == labels["q"].shape[0]
    for q, legal, row in zip(labels["q"], labels["legal"], expected):
        np.testing.assert_array_equal(q[legal], np.array(row, dtype=np.float32))
        assert not q[~legal].any()


@pytest.mark.parametrize("checkpoint, rules, seed", TABLES)
@pytest.mark.parametrize("rollout_batch", [1, 5, 1024])  # 5: rollouts of both learner seats refill a small pool
def test_labels_are_the_round_points_of_a_plain_loop_that_plays_each_rollout_alone(checkpoint, rules, seed,
                                                                                   rollout_batch):
    labels = label_decisions((checkpoint, rules, seed, 6), rollout_batch=rollout_batch)
    assert sorted(labels) == sorted(LABEL_KEYS)
    assert_labels_equal(labels, plain_loop_labels(checkpoint, rules, seed, 6, greedy_policy))
    # The labels are real round points of real rollouts: they vary across a decision's actions.
    legal = labels["legal"]
    spread = np.where(legal, labels["q"], -np.inf).max(1) - np.where(legal, labels["q"], np.inf).min(1)
    assert np.any(spread > 0)


@pytest.mark.parametrize("checkpoint, rules, seed", [(CLASSIC, "classic", 5), ("checkpoints/okgin_penalty_3p.pt", "penalty", 8)])
def test_a_bot_rollout_player_plays_the_learners_seat_from_its_observation(checkpoint, rules, seed):
    """``rollout: lookahead`` (the penalty recipe's first step): the bot, seeded with the decision's
    tie seed, plays the learner's seat; the decisions labelled are the policy's either way."""
    job = (checkpoint, rules, seed, 6, {"rollout": "lookahead"})
    labels = label_decisions(job)

    def lookahead(policy, tie_seed):
        bot = make_bot("lookahead", seed=tie_seed)
        return lambda state, scores, seat, _rng: bot.act(
            seat_observation(state, scores, state.config.target_score, seat, to_act=True))

    assert_labels_equal(labels, plain_loop_labels(checkpoint, rules, seed, 6, lookahead))
    by_policy = label_decisions(job[:4])
    np.testing.assert_array_equal(labels["obs"], by_policy["obs"])
    assert not np.array_equal(labels["q"], by_policy["q"])
    simple = label_decisions(job[:4] + ({"rollout": "simple"},))  # simple from its state fast path
    assert_labels_equal(simple, plain_loop_labels(checkpoint, rules, seed, 6,
                                                  lambda policy, _seed: lambda state, scores, seat, rng:
                                                  simple_action_for_state(state, rng)))


@pytest.mark.parametrize("num_players", [3, 4])
def test_a_penalty_policy_labels_tables_of_its_own_player_count(num_players):
    from okgin_env.observation import layout_for

    labels = label_decisions((f"checkpoints/okgin_penalty_{num_players}p.pt", "penalty", 4, 3))
    assert labels["obs"].shape == (3, layout_for(num_players).size)


def test_another_seed_gives_other_labels_and_the_same_seed_the_same():
    a = label_decisions((CLASSIC, "classic", 5, 6))
    assert not np.array_equal(a["obs"], label_decisions((CLASSIC, "classic", 8, 6))["obs"])
    again = label_decisions((CLASSIC, "classic", 5, 6))
    for key in LABEL_KEYS:
        np.testing.assert_array_equal(a[key], again[key])


def test_a_job_may_carry_the_checkpoint_bytes_instead_of_its_path(tmp_path, monkeypatch):
    """What a Ray job sends to a node that does not have the file: the same labels, and its copy
    of the file is gone when the job ends (such copies were left in /tmp)."""
    import tempfile

    from training.labelling import label_with_teacher

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    by_path = label_decisions((CLASSIC, "classic", 5, 4))
    by_bytes = label_decisions((Path(CLASSIC).read_bytes(), "classic", 5, 4))
    for key in LABEL_KEYS:
        np.testing.assert_array_equal(by_bytes[key], by_path[key])
    label_with_teacher((Path(CLASSIC).read_bytes(), "classic", "simple", 5, 2))
    assert list(tmp_path.iterdir()) == []


def test_a_suit_symmetric_file_is_labelled_by_its_network_alone(tmp_path):
    """The shipped files ask for suit-symmetric play; labelling plays their network itself (one
    forward pass, not 24): the same labels as the same weights without the flag."""
    from training.policy import load_checkpoint, write_checkpoint

    payload = load_checkpoint(CLASSIC)
    assert payload["metadata"]["suit_symmetric"] is True
    plain = tmp_path / "plain.pt"
    write_checkpoint(plain, {**payload, "metadata": {**payload["metadata"], "suit_symmetric": False}})
    shipped, alone = label_decisions((CLASSIC, "classic", 5, 4)), label_decisions((str(plain), "classic", 5, 4))
    for key in LABEL_KEYS:
        np.testing.assert_array_equal(shipped[key], alone[key])


@pytest.mark.parametrize("job, message", [
    ((CLASSIC, "classic", 5, 2, {"opponent": "policy"}), "allowed keys: rollout"),
    ((CLASSIC, "classic", 5, 2, {"rollout": 3}), "rollout player 3"),
    ((CLASSIC, "classic", 5, 2, {"rollout": "aggressor"}), "held-out bots"),
    ((CLASSIC, "classic", 5, 2, {"rollout": "search:time_limit=0.1"}), "time_limit"),
    ((CLASSIC, "classic", 5, 2, {}, {}), "4 or 5 entries"),
])
def test_bad_jobs_are_refused_with_what_is_allowed(job, message):
    with pytest.raises(ValueError, match=message):
        label_decisions(job)
    with pytest.raises(ValueError, match="rollout_batch must be at least 1"):
        label_decisions((CLASSIC, "classic", 5, 2), rollout_batch=0)


# ----------------------------------------------------------------------------- the improvement step's labelling


def improve(argv: list[str], **fit) -> dict:
    import dataclasses

    from training.improve import FitSettings, parse_args, run

    config, options = parse_args(argv)
    config = dataclasses.replace(config, fit=FitSettings(**{"chunk": 4, "epochs": 1, **fit}))
    return run(config, options.run_dir, resume=options.resume, progress_bar=False)


def test_improve_resumes_labelling_from_the_chunks_written_before(tmp_path):
    common = ["--init-from", CLASSIC, "--decisions", "12", "--workers", "1", "--eval-matches", "0", "--seed", "3"]
    first, second = tmp_path / "first", tmp_path / "second"
    improve([*common, "--run-dir", str(first)])
    improve([*common, "--run-dir", str(second)])
    chunks = sorted(p.name for p in first.glob("labels_*.npz"))
    assert chunks == ["labels_0000.npz", "labels_0001.npz", "labels_0002.npz"]
    for name in chunks:  # the same settings label the same
        with np.load(first / name) as a, np.load(second / name) as b:
            for key in LABEL_KEYS:
                np.testing.assert_array_equal(a[key], b[key])
    # An interrupted run: one chunk missing; the others are kept.
    kept = (first / "labels_0000.npz").stat().st_mtime_ns
    (first / "labels_0001.npz").unlink()
    improve([*common, "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns == kept  # not labelled again
    with np.load(first / "labels_0001.npz") as a, np.load(second / "labels_0001.npz") as b:
        np.testing.assert_array_equal(a["q"], b["q"])  # the missing chunk, labelled again, is the same
    # The same checkpoint from another path (a copy, a clone) resumes too: the manifest records its bytes' hash.
    copy = tmp_path / "copy.pt"
    shutil.copyfile(CLASSIC, copy)
    improve(["--init-from", str(copy), *common[2:], "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns == kept
    assert json.loads((first / "labels.json").read_text())["init_from"].startswith("sha256:")
    # Another seed: the resume is refused (its chunks are not the labels asked for), nothing is removed;
    # more workers are how it runs, not what it labels.
    with pytest.raises(ValueError, match="seed: 3 -> 4"):
        improve([*common[:-1], "4", "--run-dir", str(first), "--resume"])
    # Another start: the message names the file given, beside the hashes the manifest compares.
    with pytest.raises(ValueError, match=r"init_from: 'sha256:.*a start is recorded by its file's hash: "
                                         r"--init-from checkpoints/okgin_classic_ppo.pt is sha256:"):
        improve(["--init-from", "checkpoints/okgin_classic_ppo.pt", *common[2:], "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns == kept
    improve([*common[:5], "2", *common[6:], "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns == kept
    assert not list(first.glob("partial_*"))


@pytest.mark.parametrize("damage, message", [
    (lambda path: path.write_bytes(b""), "labels_0000.npz cannot be read"),
    (lambda path: path.write_bytes(path.read_bytes()[:100]), "labels_0000.npz cannot be read"),
    (lambda path: np.savez(path, q=np.zeros(3)), "labels_0000.npz cannot be read"),
])
def test_a_damaged_label_chunk_of_extra_labels_is_named(tmp_path, damage, message):
    earlier = tmp_path / "earlier"
    improve(["--init-from", CLASSIC, "--decisions", "4", "--workers", "1", "--eval-matches", "0",
             "--run-dir", str(earlier)])
    damage(earlier / "labels_0000.npz")
    with pytest.raises(ValueError, match=message):
        improve(["--init-from", CLASSIC, "--decisions", "4", "--workers", "1", "--eval-matches", "0",
                 "--extra-labels", str(earlier), "--run-dir", str(tmp_path / "later")])
    assert not (tmp_path / "later").exists()  # read before any labelling: nothing was written


def test_extra_labels_of_other_rules_or_inputs_are_refused_before_labelling(tmp_path):
    """Standard labels have the classic arrays' shapes: they were fitted into a classic policy
    without a word, and a 3-player run's failed with numpy's text after the labelling."""
    standard = tmp_path / "standard"
    improve(["--init-from", "checkpoints/okgin_standard.pt", "--decisions", "4", "--workers", "1",
             "--eval-matches", "0", "--run-dir", str(standard)])
    later = ["--init-from", CLASSIC, "--decisions", "4", "--workers", "1", "--eval-matches", "0",
             "--run-dir", str(tmp_path / "later")]
    with pytest.raises(ValueError, match="--extra-labels .*standard: it holds labels of rules='standard'; "
                                         "this run fits rules='classic'"):
        improve([*later, "--extra-labels", str(standard)])
    record = json.loads((standard / "labels.json").read_text())
    (standard / "labels.json").write_text(json.dumps({**record, "rules": "classic"}))
    with np.load(standard / "labels_0000.npz") as chunk:
        arrays = dict(chunk)
    np.savez(standard / "labels_0000.npz", **{**arrays, "obs": arrays["obs"][:, :7]})
    with pytest.raises(ValueError, match=r"its obs holds \(7,\) of float32 a decision"):
        improve([*later, "--extra-labels", str(standard)])
    np.savez(standard / "labels_0000.npz", **{**arrays, "legal": arrays["legal"].astype(np.int64)})
    with pytest.raises(ValueError, match="its legal holds"):
        improve([*later, "--extra-labels", str(standard)])
    assert not (tmp_path / "later").exists()


def test_improve_cli_exits_2_with_a_message(tmp_path, capsys):
    from training.improve import cli

    assert cli(["--init-from", str(tmp_path / "missing.pt"), "--run-dir", str(tmp_path / "r")]) == 2
    assert "missing.pt" in capsys.readouterr().err
    for flag, value, message in (("--decisions", "1", "--decisions must be at least 2"),
                                 ("--objective", "imitate", "--objective 'imitate'; allowed: regress, policy"),
                                 ("--rollout-player", "defender", "held-out bots"),
                                 ("--extra-labels", str(tmp_path / "none"), "no labels_*.npz there")):
        assert cli(["--init-from", CLASSIC, flag, value, "--run-dir", str(tmp_path / "r")]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("damage", ["manifest_list", "truncated_chunk", "empty_chunk", "no_q", "scalar_q", "narrow_obs",
                                    "int_legal"])
def test_improve_resume_relabels_what_is_damaged(tmp_path, damage):
    """Issue 42: a damaged labels.json or label chunk on --resume is labelled again, not a traceback."""
    common = ["--init-from", CLASSIC, "--decisions", "8", "--workers", "1", "--eval-matches", "0", "--seed", "3",
              "--run-dir", str(tmp_path / "r")]
    improve(common)
    first = np.load(tmp_path / "r" / "labels_0001.npz")["q"]
    if damage == "manifest_list":
        (tmp_path / "r" / "labels.json").write_text("[]")
    elif damage in ("no_q", "scalar_q"):
        with np.load(tmp_path / "r" / "labels_0001.npz") as chunk:
            arrays = {key: chunk[key] for key in chunk.files if key != "q"}
        np.savez(tmp_path / "r" / "labels_0001.npz", **arrays, **({"q": np.float32(1)} if damage == "scalar_q" else {}))
    elif damage in ("narrow_obs", "int_legal"):  # one row per decision, but not this network's inputs
        with np.load(tmp_path / "r" / "labels_0001.npz") as chunk:
            arrays = dict(chunk)
        if damage == "narrow_obs":
            arrays["obs"] = arrays["obs"][:, :7]
        else:
            arrays["legal"] = arrays["legal"].astype(np.int64)
        np.savez(tmp_path / "r" / "labels_0001.npz", **arrays)
    else:
        chunk = tmp_path / "r" / "labels_0001.npz"
        chunk.write_bytes(b"" if damage == "empty_chunk" else chunk.read_bytes()[:200])
    improve([*common, "--resume"])
    np.testing.assert_array_equal(np.load(tmp_path / "r" / "labels_0001.npz")["q"], first)


def test_a_folder_in_place_of_a_label_chunk_is_named(tmp_path):
    common = ["--init-from", CLASSIC, "--decisions", "4", "--workers", "1", "--eval-matches", "0",
              "--run-dir", str(tmp_path / "r")]
    (tmp_path / "r" / "labels_0000.npz").mkdir(parents=True)
    with pytest.raises(ValueError, match="labels_0000.npz is a folder where a label chunk belongs"):
        improve([*common, "--resume"])
