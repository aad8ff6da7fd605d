"""okgin_env/match_loop.py: the one match loop gives what raw_env gives, and ends as asked."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils import seeding

import okgin_env
from okgin_env.bots import make_bot
from okgin_env.match_loop import MatchResult, play_match
from okgin_env.rules.config import make_config


class NeverKnocks:
    """The lowest legal action: draws, takes, discards, but never knocks."""

    def act(self, observation):
        return int(np.flatnonzero(observation["action_mask"])[0])


def bots(names, seed):
    return [make_bot(name, seed=seed + seat) for seat, name in enumerate(names)]


@pytest.mark.parametrize(("rules", "players", "episode"), [("classic", 2, "match"), ("penalty", 3, "round")])
def test_every_decision_sees_what_raw_env_shows(rules, players, episode):
    config = make_config(rules, num_players=players, target_score=40)
    seen = []
    rng, _ = seeding.np_random(11)
    result = play_match(
        config, bots(["simple"] * players, 5), rng, episode=episode,
        on_decision=lambda match, seat, observation: seen.append((seat, observation)),
    )
    env = okgin_env.raw_env(rules=rules, num_players=players, episode=episode, target_score=40)
    env.reset(seed=11)
    policies = bots(["simple"] * players, 5)
    replayed = []
    while not all(env.terminations.values()):
        agent = env.agent_selection
        observation = env.observe(agent)
        replayed.append((env.agent_name_mapping[agent], observation))
        env.step(policies[env.agent_name_mapping[agent]].act(observation))
    assert len(seen) == len(replayed) == sum(result.decisions)
    for (seat, mine), (env_seat, theirs) in zip(seen, replayed):
        assert seat == env_seat
        for key in ("observation", "action_mask"):
            assert mine[key].dtype == theirs[key].dtype and np.array_equal(mine[key], theirs[key])
    assert result.scores == list(env.scores.values())
    assert result.rounds == len(result.outcomes) >= 1
    assert not result.truncated and not result.stopped
    if episode == "match":
        assert max(result.scores) >= 40 and result.winner == result.match.winner


def test_a_drawn_round_has_no_winner():
    config = make_config("classic")
    rng, _ = seeding.np_random(0)
    result = play_match(config, [NeverKnocks(), NeverKnocks()], rng, episode="round")
    assert result.winner is None and result.rounds == 1 and result.outcomes[0].kind == "draw"
    assert not result.truncated


def test_max_rounds_truncates_a_match_nobody_wins():
    config = make_config("classic")
    rng, _ = seeding.np_random(0)
    result = play_match(config, [NeverKnocks(), NeverKnocks()], rng, max_rounds=4)
    assert isinstance(result, MatchResult)
    assert (result.winner, result.rounds, result.truncated, result.stopped) == (None, 4, True, False)
    assert result.scores == [0, 0] and len(result.outcomes) == 4


def test_a_match_is_bounded_by_default():
    # A policy that never knocks must not hang evaluation or labelling (issue 14 #1).
    from okgin_env.episode import DEFAULT_MAX_ROUNDS

    rng, _ = seeding.np_random(0)
    result = play_match(make_config("classic"), [NeverKnocks(), NeverKnocks()], rng)
    assert result.truncated and result.rounds == DEFAULT_MAX_ROUNDS


def test_on_decision_can_stop_the_match():
    config = make_config("classic")
    calls = []
    rng, _ = seeding.np_random(3)
    result = play_match(
        config, bots(["random", "random"], 0), rng,
        on_decision=lambda match, seat, observation: calls.append(seat) or len(calls) == 5,
    )
    assert result.stopped and not result.truncated and result.winner is None
    assert sum(result.decisions) == 4 and len(calls) == 5  # the fifth decision was not played
    assert all(s >= 0 for s in result.seconds)


def test_deck_and_dealer_deal_the_first_round():
    config = make_config("classic")
    deck = list(range(52))
    rng, _ = seeding.np_random(0)
    first = []
    play_match(
        config, bots(["simple", "simple"], 0), rng, episode="round", deck=deck, dealer=1,
        on_decision=lambda match, seat, obs: first.append(match.round.dealer) or True,
    )
    env = okgin_env.raw_env(episode="round")
    env.reset(seed=0, options={"deck": deck, "dealer": 1})
    assert first == [1] and env.dealer == "player_1"


def test_bad_arguments():
    config = make_config("classic")
    rng, _ = seeding.np_random(0)
    with pytest.raises(ValueError, match="episode"):
        play_match(config, bots(["simple", "simple"], 0), rng, episode="season")
    with pytest.raises(ValueError, match="one policy per seat"):
        play_match(config, bots(["simple"], 0), rng)
    for bad in (0, -2, True, 1.5, "3"):
        with pytest.raises(ValueError, match="max_rounds"):
            play_match(config, bots(["simple", "simple"], 0), rng, max_rounds=bad)


class _Returns:
    def __init__(self, value):
        self.value = value

    def act(self, observation):
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


@pytest.mark.parametrize("value, message", [
    (RuntimeError("boom\nsecond line"), "player_0's policy raised RuntimeError: boom$"),
    (RuntimeError(), r"player_0's policy raised RuntimeError$"),
    ("x", r"player_0's policy played 'x', which is no action id \(an int in 0\.\.106\)$"),
    (True, r"player_0's policy played True, which is no action id"),
    (2.0, r"player_0's policy played 2\.0, which is no action id"),
    (999, r"player_0's policy played an illegal move: action must be an int in 0\.\.106, got 999"),
    (50, r"player_0's policy played an illegal move: .* legal"),
])
def test_a_policy_that_fails_or_plays_no_legal_move_is_named_by_its_seat(value, message):
    """Probe 5: an agent that raised ended okgin-eval in a traceback; an illegal move was the
    engine's message, which named no policy."""
    from okgin_env.match_loop import PolicyError

    config = make_config("classic")
    rng, _ = seeding.np_random(1)
    with pytest.raises(PolicyError, match=message) as failure:
        play_match(config, [_Returns(value), make_bot("random", seed=1)], rng)
    assert failure.value.seat == 0 and isinstance(failure.value, ValueError) and "\n" not in str(failure.value)


def test_a_numpy_or_torch_integer_is_an_action_id():
    torch = pytest.importorskip("torch")
    config = make_config("classic")
    for wrap in (np.int64, lambda a: torch.tensor(a)):
        class Wrapped:
            bot = make_bot("simple", seed=2)

            def act(self, observation):
                return wrap(self.bot.act(observation))

        rng, _ = seeding.np_random(3)
        assert play_match(config, [Wrapped(), make_bot("simple", seed=1)], rng, episode="round").rounds == 1
