"""The league's self-play snapshots (training.league.SnapshotPool)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import okgin_env  # noqa: E402
from okgin_env.bots.random_bot import random_legal_actions  # noqa: E402
from okgin_env.vector import VectorGymEnv  # noqa: E402
from training.league import SnapshotOpponent, SnapshotPool  # noqa: E402
from training.policy import build_model  # noqa: E402


def test_snapshots_are_taken_at_the_first_update_then_every_few_and_seat_the_self_play_tables():
    model = build_model({"observation_size": okgin_env.observation.layout_for(2).size, "hidden": 16})
    tables = VectorGymEnv(4, opponents="simple", learner_seat="alternate")
    pool = SnapshotPool([1, 3], seed=1, capacity=2, players=1, every=3)
    taken, add = [], pool.add
    pool.add = lambda network: taken.append(update) or add(network)
    for update in range(1, 11):
        pool.after_update(model, 2, tables, update)
    assert taken == [1, 3, 6, 9]  # the first PPO update, then every third
    assert len(pool.states) == 2  # the capacity
    assert isinstance(tables.opponents[1], SnapshotOpponent) and tables.opponents[1] is tables.opponents[3]
    assert not isinstance(tables.opponents[0], SnapshotOpponent)
    _, infos = tables.reset(seed=2)
    rng = np.random.default_rng(0)
    for _ in range(60):  # an illegal snapshot move would raise inside step
        _, _, _, _, infos = tables.step(random_legal_actions(infos["action_mask"], rng))


def test_a_pool_without_self_play_tables_takes_no_snapshot():
    model = build_model({"observation_size": okgin_env.observation.layout_for(2).size, "hidden": 16})
    pool = SnapshotPool([], seed=1)
    pool.after_update(model, 2, VectorGymEnv(2), 1)
    assert pool.states == [] and pool.opponents == []
