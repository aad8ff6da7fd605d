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


def test_illegal_actions_terminate_by_default_and_raise_on_request():
    env = GymEnv(illegal_action="raise")
    _, info = env.reset(seed=0)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="legal"):
        env.step(illegal)
    for terminating in (GymEnv(), GymEnv(illegal_action="terminate")):  # terminate is the default (issue 14 #12)
        _, info = terminating.reset(seed=0)
        _, reward, terminated, _, info = terminating.step(illegal)
        assert (reward, terminated, info["illegal_action"]) == (-1.0, True, illegal)
        with pytest.raises(RuntimeError, match="episode is over"):  # the episode ended with the illegal action
            terminating.step(int(np.flatnonzero(info["action_mask"])[0]))


@pytest.mark.parametrize("bad", [{"learner_seat": 2}, {"illegal_action": "ignore"}, {"rules": "nope"}])
def test_bad_options_are_rejected(bad):
    with pytest.raises(ValueError):
        GymEnv(**bad)


# ----------------------------------------------------------------------------- opponents: one keyword, names in both envs


class FirstLegalBatch:
    """A batch policy only (no ``act``): the first legal action of each row."""

    def act_batch(self, observations, masks):
        return np.argmax(masks, axis=1)


class FirstLegal:
    def act(self, observation):
        return int(np.flatnonzero(observation["action_mask"])[0])


def trajectory(env: GymEnv, seed: int, steps: int = 150) -> list:
    """Observations, rewards and terminations of ``steps`` seeded random learner steps (resets included)."""
    rng = np.random.default_rng(seed)
    observation, info = env.reset(seed=seed)
    out = [observation.tobytes()]
    for _ in range(steps):
        observation, reward, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        out.append((observation.tobytes(), reward, terminated))
        if terminated:
            observation, info = env.reset()
    return out


def test_bot_names_are_opponents_of_the_gym_env():
    from okgin_env.opponents import reset_seed

    named = trajectory(GymEnv(opponents="simple", episode="round"), seed=4)
    # A named opponent is rebuilt from reset(seed=s), with seed reset_seed(s): the simple bot itself.
    assert named == trajectory(GymEnv(opponents=make_bot("simple", seed=reset_seed(4)), episode="round"), seed=4)
    assert named == trajectory(GymEnv(opponents="simple", episode="round"), seed=4)  # replays
    # "random" (also None): uniform legal actions from the env's own generator; "simple" is the default.
    assert trajectory(GymEnv(opponents="random"), seed=5) == trajectory(GymEnv(opponents=None), seed=5)
    assert trajectory(GymEnv(opponents="simple"), seed=5) == trajectory(GymEnv(), seed=5)
    assert trajectory(GymEnv(opponents="random"), seed=5) != trajectory(GymEnv(), seed=5)
    # A batch policy works one decision at a time, as the same policy with act().
    assert trajectory(GymEnv(opponents=FirstLegalBatch()), seed=6) == trajectory(GymEnv(opponents=FirstLegal()), seed=6)


def test_opponents_is_the_one_keyword_of_both_single_agent_envs():
    from okgin_env import VectorGymEnv
    from okgin_env.bots import SearchBot
    from okgin_env.bots import SimpleBot
    from okgin_env.opponents import make_opponent

    vector = VectorGymEnv(2, opponents="simple", episode="round")
    assert isinstance(vector.opponent, SimpleBot)
    vector.reset(seed=0)
    for env_class, args in ((GymEnv, ()), (VectorGymEnv, (2,))):
        with pytest.raises(ValueError, match="opponents="):
            env_class(*args, opponent="simple")
        with pytest.raises(ValueError, match="unknown player 'simpel'"):
            env_class(*args, opponents="simpel")
        with pytest.raises(ValueError, match="cannot make a player from 3"):
            env_class(*args, opponents=3)
    config = okgin_env.make_config("penalty", num_players=3)
    search = make_opponent("search", seed=1, config=config)
    assert isinstance(search, SearchBot)
    GymEnv(opponents="search", rules="penalty", num_players=3)  # accepted by name in both
    VectorGymEnv(2, opponents="search", rules="penalty", num_players=3)
    with pytest.raises(ValueError, match="one opponent per other seat"):
        GymEnv(opponents=["simple"], rules="penalty", num_players=3)
    with pytest.raises(ValueError, match="one opponent for each of"):
        GymEnv(opponents={"player_1": "simple"}, learner_seat="alternate")
    env = GymEnv(opponents=["simple", None], rules="penalty", num_players=3, episode="round")
    env.reset(seed=1)
    assert isinstance(env._opponent_for(1), SimpleBot)


def test_opponent_seeds_and_game_indices_are_checked_as_the_vector_env_checks_them():
    from okgin_env.bots import SimpleBot
    from okgin_env.vector import VectorGymEnv

    for bad in ("a", -5, True, 1.5):
        for make in (lambda seed: GymEnv(opponent_seed=seed), lambda seed: GymEnv(opponents="random", opponent_seed=seed),
                     lambda seed: VectorGymEnv(2, opponent_seed=seed)):
            with pytest.raises(ValueError, match="opponent_seed=.*allowed: None or a non-negative int"):
                make(bad)
    vector = VectorGymEnv(2)
    for game in (1.5, True, 2, -1):
        with pytest.raises(ValueError, match=r"game=.*; allowed: 0..1 \(an int\)"):
            vector.set_opponent(game, SimpleBot(seed=1))
    vector.set_opponent(np.int64(1), SimpleBot(seed=1))


def test_using_the_vector_env_alone_registers_the_ids():
    """okgin_env.vector is not built on env.py, which registers the ids: gymnasium.make_vec failed."""
    import subprocess
    import sys

    code = ("from okgin_env.vector import VectorGymEnv; VectorGymEnv(2); import gymnasium; "
            "assert 'OklahomaGin-v0' in gymnasium.registry")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_use_before_reset_is_a_reset_required_error_everywhere():
    """The raw env's accessors said "has no attribute" (their error went through __getattr__), and
    the wrapped env raised PettingZoo's AssertionError or a bare AttributeError, where the env's
    doc page promises a ResetRequiredError (a RuntimeError)."""
    from okgin_env.env import ResetRequiredError

    raw = okgin_env.raw_env()
    for name in ("scores", "round_state", "discard_pile", "stock_size", "dealer", "knock_limit", "agents"):
        with pytest.raises(ResetRequiredError, match="call reset"):
            getattr(raw, name)
    wrapped = okgin_env.env()
    for use in (lambda: wrapped.step(0), lambda: wrapped.observe("player_0"), lambda: wrapped.render(),
                lambda: wrapped.last(), lambda: wrapped.agents, lambda: wrapped.state(), lambda: wrapped.agent_iter()):
        with pytest.raises(ResetRequiredError, match="call reset"):
            use()
    assert not hasattr(wrapped, "agents")  # (still an AttributeError, as PettingZoo's tools expect)
    with pytest.raises(ResetRequiredError):
        GymEnv(render_mode="ansi").render()
