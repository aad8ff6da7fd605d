"""The single-agent Gymnasium wrapper: env checker, masks, rewards, redeals, bad input."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import okgin_env
from okgin_env.bots import make_bot
from okgin_env.gym_env import GymEnv


@pytest.mark.parametrize("options", [{}, {"rules": "penalty", "num_players": 3}, {"episode": "round", "reward": "win"}])
def test_gymnasium_env_checker_passes(options):
    check_env(GymEnv(illegal_action="terminate", **options), skip_render_check=True)


def test_registered_id_and_vector_entry_point():
    env = gymnasium.make("OklahomaGin-v0", opponents=make_bot("simple", seed=0))
    observation, info = env.reset(seed=3)
    assert observation.shape == env.observation_space.shape
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].any()
    vector = gymnasium.make_vec("OklahomaGin-v0", num_envs=3, vectorization_mode="vector_entry_point")
    observations, _ = vector.reset(seed=0)
    assert observations.shape == (3, *env.observation_space.shape)


def test_learner_plays_a_whole_match_with_masks_and_the_rewards_sum_to_the_score_difference():
    env = GymEnv(opponents=make_bot("simple", seed=1), learner_seat=1, target_score=40)
    observation, info = env.reset(seed=5)
    rng = np.random.default_rng(0)
    total, steps = info["opponent_reward_before_first_move"], 0
    terminated = False
    while not terminated:
        mask = env.action_masks()
        assert np.array_equal(mask, info["action_mask"].astype(bool))
        assert sorted(np.flatnonzero(mask)) == list(env.aec.round_state.legal_actions())
        observation, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert not truncated
        total += reward
        steps += 1
    scores = env.aec.scores
    assert total == pytest.approx(scores["player_1"] - scores["player_0"])
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


def test_an_episode_over_before_the_learners_first_decision_is_dealt_again():
    # Seat 0 deals, so the simple bot (seat 1) is offered the upcard first; with this deck it
    # takes the upcard and knocks (gin) at once, before the learner ever decides.
    hand_bot = "AS 2S 3S 4S 5S 6S 7S 8S 9S TS"
    hand_learner = "AH 2H 3H 4H 5H 6H 7H 8H 9H TH"
    deck = []
    for bot_card, learner_card in zip(hand_bot.split(), hand_learner.split()):
        deck += [bot_card, learner_card]
    deck.append("JS")
    deck += [okgin_env.card_str(c) for c in range(52) if okgin_env.card_str(c) not in deck]
    env = GymEnv(opponents=make_bot("simple", seed=0), learner_seat=0, episode="round")
    observation, info = env.reset(seed=2, options={"deck": deck, "dealer": 0})
    assert info["episodes_without_learner"] == 1
    assert info["action_mask"].any()


def test_illegal_actions_raise_by_default_and_terminate_on_request():
    env = GymEnv()
    _, info = env.reset(seed=0)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="legal"):
        env.step(illegal)
    terminating = GymEnv(illegal_action="terminate")
    _, info = terminating.reset(seed=0)
    _, reward, terminated, _, info = terminating.step(illegal)
    assert (reward, terminated, info["illegal_action"]) == (-1.0, True, illegal)


@pytest.mark.parametrize("bad", [{"learner_seat": 2}, {"illegal_action": "ignore"}, {"rules": "nope"}])
def test_bad_options_are_rejected(bad):
    with pytest.raises(ValueError):
        GymEnv(**bad)
