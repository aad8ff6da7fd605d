"""The PettingZoo environment (okgin_env/env.py): API conformance, determinism, copies, masks,
scripted rounds with exact rewards and outcomes, whole matches, errors and accessors.

Scripted rounds use deck injection (``reset(options={"deck": ..., "dealer": 0})``); ``make_deck``
below turns "who holds what" into the exact 52-card deck (docs/api.md: dealt one card at a time
starting with the player after the dealer, then the upcard, then the stock, its top first).
"""

from __future__ import annotations

import copy
import pickle
import random

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, seed_test

import okgin_env
from okgin_env import card_id, parse_cards
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, NUM_ACTIONS, PASS, TAKE_DISCARD

PRESETS = [
    pytest.param({"rules": "classic", "num_players": 2}, id="classic-2"),
    pytest.param({"rules": "penalty", "num_players": 2}, id="penalty-2"),
    pytest.param({"rules": "penalty", "num_players": 3}, id="penalty-3"),
    pytest.param({"rules": "penalty", "num_players": 4}, id="penalty-4"),
]


# ----------------------------------------------------------------------------- helpers


def make_deck(hands, upcard, stock=(), dealer=0) -> list[int]:
    """The deck (top first) that deals ``hands[seat]`` to each seat, then ``upcard``, then ``stock``
    on top of the stock; the cards nobody named fill the rest of the stock in id order."""
    hands = [parse_cards(h) for h in hands]
    n = len(hands)
    deck = [hands[(dealer + 1 + i) % n][i // n] for i in range(n * len(hands[0]))]
    deck.append(card_id(upcard))
    deck += parse_cards(stock)
    assert len(set(deck)) == len(deck), "a card is named twice"
    return deck + [c for c in range(52) if c not in deck]


def discard(card: str) -> int:
    return DISCARD_BASE + card_id(card)


def knock(card: str) -> int:
    return KNOCK_BASE + card_id(card)


def random_legal(observation: dict, rng: random.Random) -> int:
    legal = np.flatnonzero(observation["action_mask"])
    return int(legal[rng.randrange(len(legal))])


def eager_action(observation: dict, rng: random.Random) -> int:
    """Knock whenever a knock is legal (short rounds), else a uniformly random legal action."""
    legal = np.flatnonzero(observation["action_mask"])
    if legal[-1] >= KNOCK_BASE:
        return int(legal[-1])
    return int(legal[rng.randrange(len(legal))])


def finish(env) -> None:
    """Step every terminated agent with ``None`` until no agent is left (the PettingZoo way)."""
    for _ in env.agent_iter(max_iter=10):
        _, _, terminated, truncated, _ = env.last()
        assert terminated or truncated
        env.step(None)
    assert env.agents == []


def play_script(env, actions) -> None:
    for action in actions:
        observation, _, terminated, _, _ = env.last()
        assert not terminated
        assert observation["action_mask"][action] == 1, (action, np.flatnonzero(observation["action_mask"]))
        env.step(action)


def state_snapshot(env) -> tuple:
    """Everything an illegal action must leave untouched (observations of every agent included)."""
    raw = env.unwrapped
    st = raw.round_state
    observations = tuple(
        (raw.observe(a)["observation"].tobytes(), raw.observe(a)["action_mask"].tobytes()) for a in raw.agents
    )
    return (
        raw.agent_selection,
        tuple(st.hands),
        tuple(st.stock),
        tuple(st.discard_pile),
        st.phase,
        st.current,
        tuple(st.history),
        tuple(raw.match.scores),
        dict(raw.rewards),
        dict(raw._cumulative_rewards),
        dict(raw.terminations),
        observations,
    )


# Non-dealer (seat 1) holds three runs and 5C: deadwood 5 (knock limit 10 with a K upcard).
KNOCKER = "AS 2S 3S 4H 5H 6H 7D 8D 9D 5C"
# Seat 0 holds nothing that melds or lays off: deadwood 10+10+2+4+6+8+10+10+10+9 = 79.
LOOSE = "KS KD 2C 4C 6C 8C TC JH QH 9S"


# ----------------------------------------------------------------------------- PettingZoo API


@pytest.mark.parametrize("kwargs", PRESETS)
@pytest.mark.parametrize("episode", ["match", "round"])
def test_api_test(kwargs, episode):
    api_test(okgin_env.env(episode=episode, **kwargs), num_cycles=300)


@pytest.mark.parametrize("kwargs", PRESETS)
def test_seed_test(kwargs):
    seed_test(lambda: okgin_env.env(**kwargs), num_cycles=300)


def test_registered_with_pettingzoo_make():
    env = pettingzoo.make("aec", "okgin/oklahoma_gin_v0")
    assert isinstance(env, pettingzoo.AECEnv)
    assert isinstance(env.unwrapped, okgin_env.raw_env)
    env.reset(seed=3)
    assert env.agents == ["player_0", "player_1"]
    penalty = pettingzoo.make("aec", "okgin/oklahoma_gin_v0", rules="penalty", num_players=4)
    penalty.reset(seed=3)
    assert penalty.agents == [f"player_{i}" for i in range(4)]
    assert penalty.unwrapped.config.rules == "penalty"


@pytest.mark.parametrize("kwargs", PRESETS)
@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_copy_mid_game_continues_identically(kwargs, copier):
    """A copy taken mid-match plays on exactly like the original, new deals (env RNG) included."""
    env = okgin_env.env(target_score=30, **kwargs)
    env.reset(seed=11)
    rng = random.Random(5)
    for _ in range(37):
        env.step(random_legal(env.last()[0], rng))
    twin = pickle.loads(pickle.dumps(env)) if copier == "pickle" else copy.deepcopy(env)
    assert twin.unwrapped is not env.unwrapped
    rng_a, rng_b = random.Random(9), random.Random(9)
    rounds_before = env.unwrapped.match.rounds_played
    for _ in range(5000):  # on into later rounds, dealt by the copied RNG
        obs_a, rew_a, term_a, trunc_a, info_a = env.last()
        obs_b, rew_b, term_b, trunc_b, info_b = twin.last()
        assert env.agent_selection == twin.agent_selection
        np.testing.assert_array_equal(obs_a["observation"], obs_b["observation"])
        np.testing.assert_array_equal(obs_a["action_mask"], obs_b["action_mask"])
        assert (rew_a, term_a, trunc_a, info_a) == (rew_b, term_b, trunc_b, info_b)
        if term_a or trunc_a or env.unwrapped.match.rounds_played >= rounds_before + 2:
            break
        env.step(eager_action(obs_a, rng_a))
        twin.step(eager_action(obs_b, rng_b))
        assert env.rewards == twin.rewards
    assert env.unwrapped.round_state.history == twin.unwrapped.round_state.history
    assert env.unwrapped.scores == twin.unwrapped.scores
    assert env.unwrapped.match.rounds_played == twin.unwrapped.match.rounds_played
    assert env.unwrapped.match.rounds_played > rounds_before


# ----------------------------------------------------------------------------- masks


@pytest.mark.parametrize("kwargs", PRESETS)
def test_mask_equals_engine_legal_actions(kwargs):
    env = okgin_env.env(target_score=60, **kwargs)
    env.reset(seed=2)
    rng = random.Random(2)
    raw = env.unwrapped
    checked = 0
    for _ in range(1500):
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.reset(seed=rng.randrange(10**6))
            continue
        legal = raw.round_state.legal_actions()
        assert observation["action_mask"].dtype == np.int8
        assert observation["action_mask"].shape == (NUM_ACTIONS,)
        assert np.flatnonzero(observation["action_mask"]).tolist() == sorted(legal)
        for agent in raw.agents:
            if agent != env.agent_selection:
                assert not raw.observe(agent)["action_mask"].any(), agent
            assert raw.observe(agent)["observation"] in raw.observation_space(agent)["observation"]
        checked += 1
        env.step(random_legal(observation, rng))
    assert checked > 1000


def test_masks_all_zero_after_the_end():
    env = okgin_env.env(episode="round")
    env.reset(options={"deck": make_deck([LOOSE, KNOCKER], "KH", ["QC"]), "dealer": 0})
    play_script(env, [PASS, PASS, DRAW_STOCK, knock("QC")])
    for agent in env.agents:
        assert not env.observe(agent)["action_mask"].any()
    finish(env)


# ----------------------------------------------------------------------------- scripted rounds


def scripted_round(hands, upcard, stock, actions, reward, **kwargs):
    env = okgin_env.env(episode="round", reward=reward, **kwargs)
    env.reset(options={"deck": make_deck(hands, upcard, stock), "dealer": 0})
    for seat, hand in enumerate(hands):
        assert env.unwrapped.hand(f"player_{seat}") == sorted(parse_cards(hand))
    play_script(env, actions)
    assert all(env.terminations.values())
    outcome = env.infos["player_0"]["round_outcome"]
    assert all(env.infos[a]["round_outcome"] == outcome for a in env.agents)
    return env, outcome


def expected_rewards(reward, points_rewards, winner, n=2):
    if reward == "points":
        return {f"player_{s}": float(r) for s, r in enumerate(points_rewards)}
    if winner is None:
        return {f"player_{s}": 0.0 for s in range(n)}
    return {f"player_{s}": 1.0 if s == winner else -1.0 for s in range(n)}


def check_final_rewards(env, expected):
    assert env.rewards == expected
    got = {}
    for agent in env.agent_iter(max_iter=10):
        _, cumulative, terminated, _, _ = env.last()
        assert terminated
        got[agent] = cumulative
        env.step(None)
    assert got == expected
    assert env.agents == []


@pytest.mark.parametrize("reward", ["points", "win"])
def test_scripted_knock(reward):
    # Both decline the K upcard; seat 1 draws QC and knocks discarding it: 5 against 79.
    env, outcome = scripted_round([LOOSE, KNOCKER], "KH", ["QC"], [PASS, PASS, DRAW_STOCK, knock("QC")], reward)
    assert outcome["kind"] == "knock"
    assert (outcome["knocker"], outcome["winner"]) == (1, 1)
    assert outcome["deadwood"] == [79, 5]
    assert outcome["points"] == [0, 74]
    assert outcome["rewards"] == [-74.0, 74.0]
    assert outcome["knock_card"] == card_id("QC")
    assert sorted(map(sorted, outcome["melds"][1])) == sorted(sorted(parse_cards(m)) for m in ["AS 2S 3S", "4H 5H 6H", "7D 8D 9D"])
    assert outcome["layoffs"] == [[], []]
    assert outcome["hands"] == [sorted(parse_cards(LOOSE)), sorted(parse_cards(KNOCKER))]
    assert env.unwrapped.scores == {"player_0": 0, "player_1": 74}
    check_final_rewards(env, expected_rewards(reward, [-74, 74], 1))


def test_each_agent_gets_its_own_round_outcome_dict():
    """One agent (or a wrapper) changing its info must not change what the other agents see."""
    env = okgin_env.env(rules="penalty", num_players=3, episode="round")
    env.reset(seed=5)
    rng = random.Random(5)
    while not any(env.terminations.values()):
        env.step(eager_action(env.observe(env.agent_selection), rng))
    infos = env.unwrapped.infos
    first, *others = env.agents
    outcome = infos[first]["round_outcome"]
    assert all(infos[agent]["round_outcome"] == outcome for agent in others)
    unchanged = copy.deepcopy(outcome)
    outcome["kind"] = "changed"
    outcome["points"].append(99)
    outcome["hands"][0].clear()
    assert all(infos[agent]["round_outcome"] == unchanged for agent in others)


@pytest.mark.parametrize("reward", ["points", "win"])
def test_scripted_gin(reward):
    # Seat 1 holds three runs and KC; draws TD (7D-TD) and knocks KC: gin, 25 + 79.
    hand = "AS 2S 3S 4H 5H 6H 7D 8D 9D KC"
    env, outcome = scripted_round([LOOSE, hand], "QS", ["TD"], [PASS, PASS, DRAW_STOCK, knock("KC")], reward)
    assert outcome["kind"] == "gin"
    assert (outcome["knocker"], outcome["winner"]) == (1, 1)
    assert outcome["deadwood"] == [79, 0]
    assert outcome["points"] == [0, 104]
    assert outcome["rewards"] == [-104.0, 104.0]
    check_final_rewards(env, expected_rewards(reward, [-104, 104], 1))


@pytest.mark.parametrize("reward", ["points", "win"])
def test_scripted_gin_forbids_layoffs(reward):
    # The defender's 4S and TD would lay off on a knock, but not on gin.
    hand = "AS 2S 3S 4H 5H 6H 7D 8D 9D KC"
    defender = "4S TS 2C 4C 6C 8C TC JH QH 9S"
    env, outcome = scripted_round([defender, hand], "QS", ["TD"], [PASS, PASS, DRAW_STOCK, knock("KC")], reward)
    assert outcome["kind"] == "gin"
    assert outcome["layoffs"] == [[], []]
    assert outcome["deadwood"] == [4 + 10 + 2 + 4 + 6 + 8 + 10 + 10 + 10 + 9, 0]
    assert outcome["points"] == [0, 25 + 73]


@pytest.mark.parametrize("reward", ["points", "win"])
def test_scripted_undercut(reward):
    # Seat 1 knocks with 5; seat 0 holds three melds and 3D: deadwood 3 < 5, undercut 10 + 2.
    defender = "TS JS QS TH JH QH TC JC QC 3D"
    env, outcome = scripted_round([defender, KNOCKER], "KD", ["KC"], [PASS, PASS, DRAW_STOCK, knock("KC")], reward)
    assert outcome["kind"] == "undercut"
    assert (outcome["knocker"], outcome["winner"]) == (1, 0)
    assert outcome["deadwood"] == [3, 5]
    assert outcome["points"] == [12, 0]
    assert outcome["rewards"] == [12.0, -12.0]
    assert env.unwrapped.scores == {"player_0": 12, "player_1": 0}
    check_final_rewards(env, expected_rewards(reward, [12, -12], 0))


def test_scripted_tie_is_undercut_in_classic():
    defender = "TS JS QS TH JH QH TC JC QC 5D"  # deadwood 5, equal to the knocker's
    _, outcome = scripted_round([defender, KNOCKER], "KD", ["KC"], [PASS, PASS, DRAW_STOCK, knock("KC")], "points")
    assert outcome["kind"] == "undercut"
    assert outcome["points"] == [10, 0]


def test_scripted_knock_with_layoffs():
    # The defender lays 4S on AS-3S and TD on 7D-9D.
    defender = "4S TD 2C 4C 6C 8C TC JH QH 9S"  # 4+10+2+4+6+8+10+10+10+9 = 73, minus 4S and TD = 59
    _, outcome = scripted_round([defender, KNOCKER], "KH", ["QC"], [PASS, PASS, DRAW_STOCK, knock("QC")], "points")
    assert outcome["kind"] == "knock"
    assert sorted(outcome["layoffs"][0]) == sorted(parse_cards("4S TD"))
    assert outcome["deadwood"] == [59, 5]
    assert outcome["points"] == [0, 54]


@pytest.mark.parametrize("reward", ["points", "win"])
def test_scripted_draw(reward):
    """Both decline the upcard, then everyone draws from the stock and throws the drawn card:
    after the discard that leaves two cards in the stock, the round is a draw (docs/rules.md §7)."""
    env = okgin_env.env(episode="round", reward=reward)
    env.reset(options={"deck": make_deck([LOOSE, KNOCKER], "KH"), "dealer": 0})
    raw = env.unwrapped
    play_script(env, [PASS, PASS])
    steps = 0
    while not any(env.terminations.values()):
        agent = env.agent_selection
        before = set(raw.hand(agent))
        top = raw.round_state.stock[-1]
        play_script(env, [DRAW_STOCK])
        assert set(raw.hand(agent)) - before == {top}
        assert env.rewards == {a: 0.0 for a in env.agents}
        play_script(env, [DISCARD_BASE + top])
        steps += 1
    assert steps == 52 - 21 - 2
    assert raw.stock_size == 2
    outcome = env.infos["player_0"]["round_outcome"]
    assert outcome["kind"] == "draw"
    assert outcome["winner"] is None and outcome["knocker"] is None
    assert outcome["points"] == [0, 0]
    assert outcome["deadwood"] == [79, 5]
    check_final_rewards(env, {"player_0": 0.0, "player_1": 0.0})


def test_scripted_penalty_knock_three_players():
    """Penalty, 3 players, 7 cards: seat 1 knocks with 3; the others are charged deadwood - 3."""
    knocker = "AS 2S 3S 4H 5H 6H 3C"  # deadwood 3
    seat2 = "KS KD 2C 4C 6C 8C QH"  # 10+10+2+4+6+8+10 = 50
    seat0 = "JS JD JH TC 9C 8D 7S"  # JS JD JH meld; 10+9+8+7 = 34
    deck = make_deck([seat0, knocker, seat2], "KH", ["QC"])
    env = okgin_env.env(rules="penalty", num_players=3, episode="round")
    env.reset(options={"deck": deck, "dealer": 0})
    play_script(env, [PASS, PASS, PASS, DRAW_STOCK, knock("QC")])
    outcome = env.infos["player_0"]["round_outcome"]
    assert outcome["kind"] == "knock"
    assert outcome["deadwood"] == [34, 3, 50]
    assert outcome["points"] == [31, 0, 47]
    # reward = mean penalty of the others - own penalty
    expected = [(0 + 47) / 2 - 31, (31 + 47) / 2 - 0, (31 + 0) / 2 - 47]
    assert outcome["rewards"] == pytest.approx(expected)
    assert sum(outcome["rewards"]) == pytest.approx(0.0)
    assert env.rewards == pytest.approx({f"player_{s}": r for s, r in enumerate(expected)})


# ----------------------------------------------------------------------------- whole matches


def match_policy(raw, rng: random.Random, draw_round: bool) -> int:
    """Knock as soon as it is legal, except in ``draw_round`` rounds where nobody knocks."""
    legal = raw.round_state.legal_actions()
    knocks = [a for a in legal if a >= KNOCK_BASE]
    if knocks and not draw_round:
        return knocks[0]
    others = [a for a in legal if a < KNOCK_BASE]
    return others[rng.randrange(len(others))]


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"rules": "classic", "num_players": 2, "target_score": 80}, id="classic-2"),
        pytest.param({"rules": "penalty", "num_players": 3, "target_score": 80}, id="penalty-3"),
    ],
)
def test_full_match_rewards_and_dealers(kwargs):
    env = okgin_env.env(**kwargs)
    env.reset(seed=4)
    raw = env.unwrapped
    n = len(env.agents)
    rng = random.Random(4)
    totals = dict.fromkeys(env.agents, 0.0)
    outcomes = []
    dealer = raw.dealer
    for _ in range(20_000):
        if any(env.terminations.values()):
            break
        draw_round = raw.match.rounds_played == 0  # the first round always reaches the wall
        env.step(match_policy(raw, rng, draw_round))
        for agent, value in env.rewards.items():
            totals[agent] += value
        info = env.infos[env.possible_agents[0]]
        if "round_outcome" in info:
            outcome = info["round_outcome"]
            outcomes.append(outcome)
            if not any(env.terminations.values()):
                expected_dealer = dealer if outcome["winner"] is None else f"player_{outcome['winner']}"
                assert raw.dealer == expected_dealer, outcome
                assert raw.round_state.history == []
                dealer = raw.dealer
    assert any(env.terminations.values()), "the match did not end"
    assert outcomes[0]["kind"] == "draw"
    assert any(o["kind"] != "draw" for o in outcomes)
    scores = raw.scores
    assert max(scores.values()) >= kwargs["target_score"]
    assert scores == {a: sum(o["points"][s] for o in outcomes) for s, a in enumerate(env.possible_agents)}
    total_points = sum(scores.values())
    for agent, own in scores.items():
        if kwargs["rules"] == "classic":
            expected = own - (total_points - own)  # own points minus the opponent's
        else:
            expected = (total_points - own) / (n - 1) - own  # others' mean penalty minus own
        assert totals[agent] == pytest.approx(expected), (agent, scores)


@pytest.mark.parametrize("rules,num_players", [("classic", 2), ("penalty", 3)])
def test_full_match_win_reward(rules, num_players):
    env = okgin_env.env(rules=rules, num_players=num_players, target_score=50, reward="win")
    env.reset(seed=8)
    raw = env.unwrapped
    rng = random.Random(8)
    totals = dict.fromkeys(env.agents, 0.0)
    while not any(env.terminations.values()):
        env.step(match_policy(raw, rng, False))
        if not any(env.terminations.values()):
            assert set(env.rewards.values()) == {0.0}
        for agent, value in env.rewards.items():
            totals[agent] += value
    winner = f"player_{raw.match.winner}"
    scores = raw.scores
    if rules == "classic":
        assert scores[winner] == max(scores.values())
    else:
        assert scores[winner] == min(scores.values())
    assert totals == {a: 1.0 if a == winner else -1.0 for a in env.possible_agents}
    check_final_rewards(env, totals)


# ----------------------------------------------------------------------------- illegal actions


@pytest.mark.parametrize("kwargs", PRESETS)
def test_illegal_action_raises_and_changes_nothing(kwargs):
    env = okgin_env.env(**kwargs)
    env.reset(seed=1)
    rng = random.Random(1)
    tried = 0
    for _ in range(150):
        legal = env.unwrapped.round_state.legal_actions()
        illegal = [a for a in range(NUM_ACTIONS) if a not in legal]
        # Wrong ids, out-of-range ids, and values that are not action ids at all (``True == 1``
        # and ``1.0 == 1`` in Python, yet neither is an action).
        for action in [rng.choice(illegal), np.int64(rng.choice(illegal)), -1, NUM_ACTIONS, None, "3", True, 1.0]:
            before = state_snapshot(env)
            with pytest.raises(ValueError, match="legal") as excinfo:
                env.step(action)
            assert state_snapshot(env) == before, action
            if isinstance(action, (int, np.integer)) and not isinstance(action, bool) and 0 <= action < NUM_ACTIONS:
                message = str(excinfo.value)
                assert all(f"{a} (" in message for a in legal), message
            tried += 1
        env.step(random_legal(env.last()[0], rng))
        if any(env.terminations.values()):
            break
    assert tried > 500


def test_illegal_action_message_names_the_legal_actions():
    env = okgin_env.env()
    env.reset(options={"deck": make_deck([LOOSE, KNOCKER], "KH", ["QC"]), "dealer": 0})
    with pytest.raises(ValueError) as excinfo:
        env.step(DRAW_STOCK)  # the upcard offer: take (1) or pass (2) only
    message = str(excinfo.value)
    assert "1 (take discard)" in message and "2 (pass)" in message
    play_script(env, [PASS, PASS, DRAW_STOCK])
    with pytest.raises(ValueError) as excinfo:
        env.step(knock("KS"))  # seat 1 does not hold KS
    message = str(excinfo.value)
    assert "knock QC" in message and "discard 5C" in message


def test_illegal_action_terminate_mode(caplog):
    env = okgin_env.env(illegal_action="terminate")
    env.reset(options={"deck": make_deck([LOOSE, KNOCKER], "KH", ["QC"]), "dealer": 0})
    play_script(env, [PASS, PASS])
    offender = env.agent_selection
    assert offender == "player_1"
    env.last()
    env.step(DISCARD_BASE + card_id("5C"))  # must draw first
    assert "Illegal move" in caplog.text  # PettingZoo's EnvLogger
    assert all(env.terminations.values())
    expected = {a: (-1.0 if a == offender else 0.0) for a in env.possible_agents}
    got = {}
    for agent in env.agent_iter(max_iter=10):
        _, cumulative, terminated, truncated, _ = env.last()
        assert terminated or truncated
        got[agent] = cumulative
        env.step(None)
    assert got == expected
    assert env.agents == []


def test_illegal_action_terminate_mode_allows_legal_play():
    env = okgin_env.env(illegal_action="terminate", episode="round")
    env.reset(options={"deck": make_deck([LOOSE, KNOCKER], "KH", ["QC"]), "dealer": 0})
    play_script(env, [PASS, PASS, DRAW_STOCK, knock("QC")])
    check_final_rewards(env, {"player_0": -74.0, "player_1": 74.0})


# ----------------------------------------------------------------------------- after the end


@pytest.mark.parametrize("kwargs", PRESETS)
def test_step_after_the_end(kwargs):
    env = okgin_env.env(episode="round", **kwargs)
    env.reset(seed=6)
    rng = random.Random(6)
    while not any(env.terminations.values()):
        env.step(random_legal(env.last()[0], rng))
    assert all(env.terminations.values())
    agent = env.agent_selection
    with pytest.raises(ValueError, match="None"):
        env.step(DRAW_STOCK)  # a dead agent's only valid action is None
    assert env.agent_selection == agent
    seen = []
    for agent in env.agent_iter(max_iter=10):
        observation, _, terminated, _, _ = env.last()
        assert terminated
        assert not observation["action_mask"].any()
        seen.append(agent)
        env.step(None)
    assert sorted(seen) == sorted(env.possible_agents)
    assert env.agents == []
    env.reset(seed=7)  # and the env is reusable
    assert env.agents == env.possible_agents
    assert env.last()[0]["action_mask"].any()


@pytest.mark.parametrize("illegal_action", ["raise", "terminate"])
def test_env_wrapper_behaves_as_pettingzoos_plain_wrapper(illegal_action):
    """``env()``'s wrapper hands ``last`` and ``step`` to the env inside in one call (speed); over
    whole matches, dead steps and errors before reset it gives what PettingZoo's plain
    ``OrderEnforcingWrapper`` gives around the same env."""
    from pettingzoo.utils.wrappers import OrderEnforcingWrapper

    ours = okgin_env.env(episode="match", illegal_action=illegal_action)
    plain = OrderEnforcingWrapper(okgin_env.env(episode="match", illegal_action=illegal_action).env)
    assert type(ours) is not OrderEnforcingWrapper and isinstance(ours, OrderEnforcingWrapper)
    assert str(ours) == str(plain)
    for env in (ours, plain):  # (ours says so with the env's ResetRequiredError, an AttributeError too)
        with pytest.raises(AttributeError, match="reset"):
            env.last()
        with pytest.raises(AttributeError, match="reset"):
            env.agent_selection  # noqa: B018
    for seed in (1, 2):
        rngs = [random.Random(seed), random.Random(seed)]
        for env in (ours, plain):
            env.reset(seed=seed)
        while ours.agents or plain.agents:
            views = [env.last() for env in (ours, plain)]
            (obs, reward, terminated, truncated, info), other = views
            assert reward == other[1] and terminated == other[2] and truncated == other[3] and info == other[4]
            assert np.array_equal(obs["observation"], other[0]["observation"])
            assert np.array_equal(obs["action_mask"], other[0]["action_mask"])
            assert ours.agent_selection == plain.agent_selection and ours.agents == plain.agents
            actions = [None if terminated or truncated else eager_action(obs, rng) for rng in rngs]
            for env, action in zip((ours, plain), actions):
                env.step(action)
        assert ours.unwrapped.match.is_over  # a whole match, through every agent's last step


# ----------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rules": "bridge"},
        {"rules": "classic", "num_players": 3},
        {"rules": "penalty", "num_players": 5},
        {"rules": "penalty", "num_players": 1},
        {"num_players": "2"},
        {"episode": "game"},
        {"reward": "score"},
        {"render_mode": "svg"},
        {"illegal_action": "ignore"},
        {"knock_limit": 11},
        {"knock_limit": "10"},
        {"gin_bonus": -1},
        {"target_score": 0},
        {"max_turns": 0},
        {"spade_double": "yes"},
        {"ace_upcard_gin_only": 1},
    ],
)
def test_bad_constructor_options_rejected(kwargs):
    with pytest.raises(ValueError) as excinfo:
        okgin_env.env(**kwargs)
    assert "allowed" in str(excinfo.value) or "expected" in str(excinfo.value)


def test_options_reach_the_rules():
    env = okgin_env.env(rules="penalty", num_players=3, gin_bonus=20, target_score=150, spade_double=True)
    env.reset(seed=0)
    config = env.unwrapped.config
    assert (config.num_players, config.gin_bonus, config.target_score, config.spade_double) == (3, 20, 150, True)
    assert len(env.unwrapped.hand("player_0")) == 7


@pytest.mark.parametrize(
    "options",
    [
        {"deck": list(range(51))},
        {"deck": list(range(51)) + [0]},
        {"deck": ["AS"] * 52},
        {"deck": "not a deck"},
        {"dealer": 2},
        {"dealer": -1},
        {"dealer": "player_0"},
    ],
)
def test_bad_reset_options_rejected_without_change(options):
    env = okgin_env.env()
    env.reset(seed=1)
    before = state_snapshot(env)
    with pytest.raises(ValueError):
        env.reset(options=options)
    assert state_snapshot(env) == before


def test_reset_accepts_card_texts_and_dealer():
    deck = make_deck([LOOSE, KNOCKER], "KH", ["QC"], dealer=1)
    env = okgin_env.env()
    env.reset(options={"deck": [okgin_env.card_str(c).lower() for c in deck], "dealer": 1})
    # dealer 1: seat 0 is dealt first, seat 0 holds hands[0]
    assert env.unwrapped.hand("player_0") == sorted(parse_cards(LOOSE))
    assert env.unwrapped.dealer == "player_1"
    assert env.agent_selection == "player_0"


# ----------------------------------------------------------------------------- accessors


def test_accessors():
    env = okgin_env.env()
    with pytest.raises(AttributeError):
        env.agent_selection  # before reset  # noqa: B018
    env.reset(options={"deck": make_deck([LOOSE, KNOCKER], "7H", ["QC", "2D"]), "dealer": 0})
    raw = env.unwrapped
    assert raw.hand("player_0") == sorted(parse_cards(LOOSE))
    assert raw.hand("player_1") == sorted(parse_cards(KNOCKER))
    assert raw.discard_pile == [card_id("7H")]
    assert raw.stock_size == 52 - 21
    assert raw.knock_limit == 7
    assert raw.dealer == "player_0"
    assert raw.scores == {"player_0": 0, "player_1": 0}
    play_script(env, [TAKE_DISCARD, discard("5C")])  # seat 1 takes the upcard, throws 5C
    assert raw.hand("player_1") == sorted(parse_cards("AS 2S 3S 4H 5H 6H 7D 8D 9D 7H"))
    assert raw.discard_pile == [card_id("5C")]
    assert raw.stock_size == 31
    assert raw.knock_limit == 7  # set by the upcard for the whole round
    play_script(env, [DRAW_STOCK])
    assert card_id("QC") in raw.hand("player_0")
    assert raw.stock_size == 30
    # The accessors hand out copies: changing them changes nothing.
    raw.discard_pile.append(0)
    raw.hand("player_0").clear()
    raw.scores["player_0"] = 99
    assert raw.discard_pile == [card_id("5C")]
    assert len(raw.hand("player_0")) == 11
    assert raw.scores == {"player_0": 0, "player_1": 0}


def deck_with_upcard(upcard: str) -> list[int]:
    up = card_id(upcard)
    deck = [c for c in range(52) if c != up]
    deck.insert(20, up)
    return deck


@pytest.mark.parametrize("upcard,limit", [("AS", 0), ("2H", 2), ("9D", 9), ("TC", 10), ("KS", 10)])
def test_knock_limit_from_upcard(upcard, limit):
    env = okgin_env.env()
    env.reset(options={"deck": deck_with_upcard(upcard)})
    assert env.unwrapped.knock_limit == limit
    assert env.unwrapped.discard_pile == [card_id(upcard)]


def test_ace_upcard_allows_one_when_option_off():
    env = okgin_env.env(ace_upcard_gin_only=False)
    env.reset(options={"deck": deck_with_upcard("AH")})
    assert env.unwrapped.knock_limit == 1



def test_every_env_reads_an_action_as_the_match_loop_does():
    """Probe 6: Discrete(107).contains(np.array(1)) holds and the match loop played 0-d integer
    arrays and tensors, but the envs refused them, so a torch policy that evaluated fine failed
    as a GymEnv opponent. Bools, floats and text stay refused everywhere."""
    import okgin_env
    from okgin_env.rules.actions import action_index

    torch = pytest.importorskip("torch")
    for good in (3, np.int64(3), np.array(3), torch.tensor(3), np.array(3, dtype=np.uint8)):
        assert action_index(good) == 3 and type(action_index(good)) is int
    for bad in (True, np.bool_(True), np.array(True), torch.tensor(True), 3.0, np.float32(3), torch.tensor(3.0),
                "3", None, np.array([3]), [3]):
        assert action_index(bad) is None, bad
    for make in (lambda a: np.array(a), lambda a: torch.tensor(a), np.int16):
        gym = okgin_env.GymEnv(opponents="simple")
        _, info = gym.reset(seed=1)
        assert gym.step(make(int(np.flatnonzero(info["action_mask"])[0])))[4]["action_mask"].any()
        for env in (okgin_env.env(), okgin_env.env(illegal_action="terminate")):
            env.reset(seed=1)
            env.step(make(int(np.flatnonzero(env.last()[0]["action_mask"])[0])))

    class TorchPolicy:
        def act(self, observation):
            return torch.tensor(int(np.flatnonzero(observation["action_mask"])[0]))

    gym = okgin_env.GymEnv(opponents=TorchPolicy())
    _, info = gym.reset(seed=0)
    for _ in range(30):
        _, _, terminated, truncated, info = gym.step(int(np.flatnonzero(info["action_mask"])[0]))
        if terminated or truncated:
            break


def test_an_unknown_agent_and_a_mask_before_reset_are_named():
    """Probe 6: hand('player_5') was a bare KeyError; GymEnv.action_masks() before reset an
    all-False mask (a masked sampler then fails far from the cause)."""
    import okgin_env
    from okgin_env.env import ResetRequiredError

    env = okgin_env.raw_env()
    env.reset(seed=0)
    for agent in ("player_5", 0, None):
        for read in (env.hand, env.observe):
            with pytest.raises(KeyError, match="unknown agent .*; the agents are player_0, player_1"):
                read(agent)
    with pytest.raises(ResetRequiredError, match="call reset\\(\\) before action_masks\\(\\)"):
        okgin_env.GymEnv().action_masks()


def test_layout_for_takes_only_the_player_counts_there_are():
    from okgin_env.observation import layout_for

    for count in (0, 1, 5, -1, True, "2", 2.0):
        with pytest.raises(ValueError, match=r"num_players=.*; allowed: 2, 3, 4"):
            layout_for(count)
    assert [layout_for(n).size for n in (2, 3, 4)] == [378, 485, 592]
