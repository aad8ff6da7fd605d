"""The ``search`` bot with ``policy=PATH``: the network plays every seat of its playouts, batched."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import okgin_env  # noqa: E402
from okgin_env.players import make_player  # noqa: E402

SPEC = "search:policy=checkpoints/okgin_classic.pt,rollouts=8"


def test_network_search_plays_legal_moves_and_repeats_itself_for_a_seed():
    env = okgin_env.env(target_score=60, episode="match")
    env.reset(seed=4)
    bots = [make_player(SPEC, seed=5), make_player(SPEC, seed=5)]
    simple = make_player("simple", seed=1)
    decisions = 0
    for agent in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        if agent == "player_0":
            first, second = (bot.act(observation) for bot in bots)
            assert first == second and observation["action_mask"][first] == 1
            env.step(first)
            decisions += 1
        else:
            env.step(simple.act(observation))
        if decisions >= 30:
            break
    assert decisions >= 15


def test_network_playouts_are_the_networks_moves():
    from okgin_env.bots.search import SearchBot
    from training.policy import load_policy

    env = okgin_env.env()
    env.reset(seed=6)
    observation = env.last()[0]
    bot = SearchBot(seed=2, policy="checkpoints/okgin_classic.pt", rollouts=4)
    network = load_policy("checkpoints/okgin_classic.pt")
    moves = []

    class Recording:
        def act_batch(self, observations, masks):
            chosen = bot_policy.act_batch(observations, masks)
            moves.extend((o, m, a) for o, m, a in zip(observations, masks, chosen))
            return chosen

    bot_policy, bot._playout_policy = bot._playout_policy, Recording()
    bot.search(okgin_env.observation.view(observation), bot.candidates(okgin_env.observation.view(observation)))
    assert len(moves) > 20
    for o, m, a in moves[:200]:
        assert a == network.act({"observation": o, "action_mask": m})


@pytest.mark.parametrize("setting, error, message", [
    ("policy=", ValueError, "policy='' is not allowed; expected a file path, or None"),
    ("policy=missing.pt", FileNotFoundError, "missing.pt"),
    ("policy=checkpoints/okgin_penalty_3p.pt", ValueError, "okgin_penalty_3p.pt"),
])
def test_bad_policy_settings_are_refused(setting, error, message):
    with pytest.raises(error, match=message):
        make_player(f"search:{setting}", seed=0)


def test_act_batch_is_act_one_by_one():
    from okgin_env.batch import BatchEnv
    from okgin_env.bots.random_bot import random_legal_actions
    from training.policy import load_policy

    policy = load_policy("checkpoints/okgin_classic.pt")
    batch = BatchEnv(32)
    out = batch.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(30):
        together = policy.act_batch(out.observations, out.action_masks)
        alone = [policy.act({"observation": o, "action_mask": m}) for o, m in zip(out.observations, out.action_masks)]
        assert together.tolist() == alone
        out = batch.step(random_legal_actions(out.action_masks, rng))
    with pytest.raises(ValueError, match="no legal action"):
        policy.act_batch(out.observations[:1], np.zeros((1, 107), np.int8))


def test_the_networks_own_move_is_always_searched_and_is_the_default():
    from okgin_env.bots.search import SearchBot
    from training.policy import load_policy

    env = okgin_env.env()
    env.reset(seed=21)
    simple = make_player("simple", seed=0)
    network = load_policy("checkpoints/okgin_classic.pt")
    bot = SearchBot(seed=1, rollouts=24, policy="checkpoints/okgin_classic.pt")
    searched = 0
    for _ in range(60):
        observation = env.last()[0]
        if env.agent_selection == "player_0" and observation["action_mask"].sum() > 1:
            bot.act(observation)
            if bot.last_values:
                assert network.act(observation) in bot.last_values  # searched, whatever the sampler ranks first
                searched += 1
        env.step(simple.act(observation))
        if any(env.terminations.values()):
            env.reset(seed=22)
    assert searched >= 5
