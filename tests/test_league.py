"""The league's prioritized sampler (training.league.PrioritizedSampler) and its use in training."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from training.league import SELF, PrioritizedSampler, split_tables, table_results  # noqa: E402
from training.train import main as train_main  # noqa: E402

TINY = ["--num-tables", "8", "--rollout-length", "8", "--bc-updates", "1", "--bc-epochs", "1",
        "--ppo-epochs", "1", "--minibatch-size", "32", "--eval-every", "1000", "--no-progress"]


def test_opponents_beaten_least_get_the_most_tables():
    sampler = PrioritizedSampler({"simple": 1.0, "random": 1.0, "search": 1.0}, power=2.0, floor=0.05, decay=0.0)
    assert sampler.weights() == {"simple": 1.0, "random": 1.0, "search": 1.0}  # no results yet: the pool's weights
    sampler.record({"simple": (50, 100), "random": (99, 100), "search": (20, 100)})
    weights = sampler.weights()
    assert weights == pytest.approx({"simple": 0.25, "random": 0.05, "search": 0.64})  # (1-p)^2, floored at 0.05
    tables = split_tables(weights, 40)
    assert tables.count("search") > tables.count("simple") > tables.count("random") >= 1


def test_pool_weights_scale_the_priorities_and_old_results_fade():
    sampler = PrioritizedSampler({"simple": 3.0, "random": 1.0}, power=1.0, floor=0.1, decay=0.5)
    sampler.record({"simple": (0, 10), "random": (10, 10)})
    assert sampler.weights() == pytest.approx({"simple": 3.0, "random": 0.1})
    sampler.record({"simple": (10, 10)})  # random not played this time: its old counts fade
    assert sampler.win_rate("simple") == pytest.approx(10 / 15)
    assert sampler.win_rate("random") == pytest.approx(1.0)
    assert sampler.rounds["random"] == pytest.approx(5.0)


def test_table_results_sum_by_opponent_name():
    names = ["simple", SELF, "simple", "random"]
    assert table_results(names, np.array([1, 0, 2, 3]), np.array([2, 1, 2, 4])) == {
        "simple": (3, 4), SELF: (0, 1), "random": (3, 4)}


@pytest.mark.parametrize("kwargs", [{"power": -1}, {"floor": 0}, {"floor": 1.5}, {"decay": 1.0}])
def test_bad_sampler_settings_are_refused(kwargs):
    with pytest.raises(ValueError, match="need power >= 0"):
        PrioritizedSampler({"simple": 1.0}, **kwargs)


def test_impossible_results_are_refused():
    sampler = PrioritizedSampler({"simple": 1.0})
    with pytest.raises(ValueError, match="3 rounds won of 2"):
        sampler.record({"simple": (3, 2)})


def test_prioritized_training_reweights_every_few_updates(tmp_path, monkeypatch):
    import training.league as league

    real_weights = league.PrioritizedSampler.weights
    seen = []
    monkeypatch.setattr(league.PrioritizedSampler, "weights",
                        lambda self: seen.append(dict(self.rounds)) or real_weights(self))
    run_dir = tmp_path / "run"
    train_main([*TINY, "--total-decisions", "640", "--run-dir", str(run_dir), "--seed", "3",
                "--opponent-pool", "simple random self", "--pool-sampling", "prioritized",
                "--reweight-every", "2"])
    assert len(seen) == 5  # 10 updates (the first imitates): re-split after updates 2, 4, 6, 8 and 10
    assert all(rounds > 0 for rounds in seen[-1].values())  # results were recorded for every opponent


def test_retable_hands_changed_tables_to_their_new_opponents():
    import okgin_env
    from okgin_env.bots.random_bot import random_legal_actions
    from okgin_env.bots import SimpleBot
    from okgin_env.vector import VectorGymEnv
    from training.league import SnapshotPool
    from training.policy import build_model
    from training.train import retable

    config = okgin_env.rules.config.make_config("classic")
    model = build_model({"observation_size": okgin_env.observation.layout_for(2).size, "hidden": 16})
    current = ["simple", "random", SELF, "simple"]
    tables = VectorGymEnv(4, opponents=["simple", "random", "simple", "simple"], learner_seat="alternate")
    kept = tables.opponents[0]
    snapshots = SnapshotPool(capacity=2, players=1, seed=1)
    snapshots.seat(model, 2, tables, [2])
    snapshots.add(model)
    wanted = ["simple", SELF, "random", "simple"]
    assert retable(tables, current, wanted, snapshots, model, config, seed=5) == wanted
    assert tables.opponents[0] is kept  # unchanged tables keep their opponent
    assert tables.opponents[1] is snapshots.opponents[0]  # the new self-play table plays a snapshot
    assert tables.opponents[2] is not snapshots.opponents[0]
    assert not isinstance(getattr(tables.opponents[2], "policy", tables.opponents[2]), SimpleBot)
    _, infos = tables.reset(seed=2)
    rng = np.random.default_rng(0)
    for _ in range(60):  # an illegal opponent move would raise inside step
        _, _, _, _, infos = tables.step(random_legal_actions(infos["action_mask"], rng))


def test_bad_pool_sampling_is_refused(tmp_path):
    from training.train import cli

    with pytest.raises(SystemExit) as exit_info:  # argparse's choices
        cli([*TINY, "--run-dir", str(tmp_path / "x"), "--pool-sampling", "greedy"])
    assert exit_info.value.code == 2
    assert cli([*TINY, "--run-dir", str(tmp_path / "y"), "--reweight-every", "0"]) == 2
