"""The batched engine (okgin_env/batch.py) against the reference AEC env, step by step.

Differential: a ``BatchEnv`` of N games reset with ``seed=s`` and N ``raw_env`` reset with
``seed=s + i`` (the documented seeding), both given the same actions, must agree at every step on
the acting agent, the action mask, the observation (``np.array_equal``), every seat's reward, the
termination, the round outcome infos and the final observations of every seat; after an episode
the AEC env is ``reset()`` without a seed (it continues its generator, as each batch game does).
Actions come from the ``simple`` policy (most games: rounds end in knocks, gins and undercuts)
and from uniformly random legal play (long rounds: draws at the wall, penalty reshuffles).
Every preset and player count, ``episode="round"`` and ``"match"``, both reward modes and the
non-default rule options are covered; the module plays several thousand games in total.

Then: seeding and auto-reset as documented, stepping subsets of games, error handling, ``observe``
for any seat, and the single-agent ``VectorGymEnv`` against ``GymEnv`` with a deterministic
opponent.
"""

from __future__ import annotations

import random
from collections import Counter

import gymnasium
import numpy as np
import pytest

import okgin_env
from okgin_env.batch import BatchEnv
from okgin_env.bots.random_bot import RandomBot, random_legal_actions
from okgin_env.gym_env import GymEnv
from okgin_env.observation import layout_for
from okgin_env.opponents import PerObservationOpponent
from okgin_env.rules.actions import KNOCK_BASE, NUM_ACTIONS
from okgin_env.rules.melds import knock_ruled_out
from okgin_env.vector import VectorGymEnv

from okgin_env.bots.simple import simple_action_for_state

PRESETS = [
    {"rules": "classic", "num_players": 2},
    {"rules": "penalty", "num_players": 2},
    {"rules": "penalty", "num_players": 3},
    {"rules": "penalty", "num_players": 4},
]


def _choose(env, mask: np.ndarray, rng: random.Random, smart: bool) -> int:
    legal = np.flatnonzero(mask)
    if smart:
        if rng.random() < 0.9:
            return int(simple_action_for_state(env.round_state, rng))
        knocks = legal[legal >= KNOCK_BASE]
        if knocks.size:
            return int(knocks[rng.randrange(knocks.size)])
    return int(legal[rng.randrange(legal.size)])


def _differential(options: dict, num_games: int, steps: int, seed: int, smart_share: float = 0.75,
                  reset_options: dict | None = None, observe_every: int = 9) -> Counter:
    """Play ``num_games`` batch games and their AEC mirrors for ``steps`` steps; return outcome counts."""
    batch = BatchEnv(num_games, **options)
    envs = [okgin_env.raw_env(**options) for _ in range(num_games)]
    result = batch.reset(seed=seed, options=reset_options)
    for i, env in enumerate(envs):
        per_game = None
        if reset_options is not None:
            per_game = {k: v[i] for k, v in reset_options.items() if v[i] is not None}
        env.reset(seed=seed + i, options=per_game)
    rng = random.Random(seed)
    smart = [i < smart_share * num_games for i in range(num_games)]
    agents = envs[0].possible_agents
    n = len(agents)
    counts: Counter = Counter()
    for t in range(steps):
        actions = []
        for i, env in enumerate(envs):
            agent = env.agent_selection
            assert agent == agents[result.seats[i]], (t, i)
            view = env.observe(agent)
            assert np.array_equal(view["action_mask"], result.action_masks[i]), (t, i)
            assert np.array_equal(view["observation"], result.observations[i]), (t, i)
            actions.append(_choose(env, view["action_mask"], rng, smart[i]))
        if t % observe_every == 0:  # any seat's view, not only the acting one
            for seat in range(n):
                observations, masks = batch.observe(seat)
                for i, env in enumerate(envs):
                    view = env.observe(agents[seat])
                    assert np.array_equal(view["observation"], observations[i]), (t, i, seat)
                    assert np.array_equal(view["action_mask"], masks[i]), (t, i, seat)
        result = batch.step(np.array(actions))
        outcomes = result.infos.get("round_outcome")
        for i, env in enumerate(envs):
            env.step(actions[i])
            expected = np.array([env.rewards[a] for a in agents], dtype=np.float32)
            assert np.array_equal(result.rewards[i], expected), (t, i, result.rewards[i], expected)
            info = env.infos[agents[0]]
            if "round_outcome" in info:
                assert result.infos["_round_outcome"][i], (t, i)
                assert outcomes[i] == info["round_outcome"], (t, i)
                counts[info["round_outcome"]["kind"]] += 1
            else:
                assert outcomes is None or not result.infos["_round_outcome"][i], (t, i)
            truncated = all(env.truncations.values())  # the match reached max_rounds undecided
            done = all(env.terminations.values()) or truncated
            assert done == bool(result.dones[i]), (t, i)
            assert truncated == bool("truncated" in result.infos and result.infos["truncated"][i]), (t, i)
            counts["truncated"] += truncated
            if done:
                final = result.infos["final_obs"][i]
                for seat, agent in enumerate(agents):
                    assert np.array_equal(env.observe(agent)["observation"], final[seat]), (t, i, seat)
                counts["episodes"] += 1
                env.reset()
            else:
                assert "_final_obs" not in result.infos or not result.infos["_final_obs"][i]
    return counts


# ----------------------------------------------------------------------------- differential


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: f"{p['rules']}-{p['num_players']}")
@pytest.mark.parametrize("reward", ["points", "win"])
def test_rounds_match_the_aec_env(preset, reward):
    counts = _differential(
        {**preset, "episode": "round", "reward": reward}, num_games=16, steps=600, seed=11, smart_share=0.9
    )
    assert counts["episodes"] >= 120
    assert counts["knock"] + counts["gin"] + counts["undercut"] > 0 and counts["draw"] > 0


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: f"{p['rules']}-{p['num_players']}")
@pytest.mark.parametrize("reward", ["points", "win"])
def test_matches_match_the_aec_env(preset, reward):
    target = 25 if preset["rules"] == "classic" else 40
    options = {**preset, "episode": "match", "reward": reward, "target_score": target}
    counts = _differential(options, num_games=12, steps=600, seed=500, smart_share=1.0)
    assert counts["episodes"] >= 30
    assert sum(counts[k] for k in ("knock", "gin", "undercut", "draw")) > counts["episodes"]  # several rounds a match


@pytest.mark.parametrize(
    "options",
    [
        {"rules": "classic", "allow_discard_taken": True, "spade_double": True, "gin_bonus": 20},
        {"rules": "classic", "ace_upcard_gin_only": False, "undercut_bonus": 15, "max_turns": 25},
        {"rules": "penalty", "num_players": 3, "max_reshuffles": 0, "spade_double": True},
        {"rules": "penalty", "num_players": 4, "max_reshuffles": 1, "allow_discard_taken": True, "max_turns": 60},
    ],
    ids=["taken-spade-gin20", "ace-undercut15-turns25", "penalty3-noreshuffle", "penalty4-reshuffle1-turns60"],
)
def test_rule_options_match_the_aec_env(options):
    counts = _differential({**options, "episode": "round"}, num_games=12, steps=300, seed=77, smart_share=0.5)
    assert counts["episodes"] >= 40


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: f"{p['rules']}-{p['num_players']}")
@pytest.mark.parametrize("episode", ["round", "match"])
def test_many_more_games_match_the_aec_env(preset, episode):
    """The same check at a larger scale (run with ``-m slow``): about 10x the default suite's games."""
    options = {**preset, "episode": episode, "target_score": 50}
    counts = _differential(options, num_games=64, steps=1500, seed=2024, smart_share=0.8, observe_every=31)
    assert counts["episodes"] >= (500 if episode == "round" else 60)


@pytest.mark.parametrize("preset", PRESETS[::2], ids=["classic-2", "penalty-3"])
def test_matches_truncated_at_max_rounds_match_the_aec_env(preset):
    """Random play rarely knocks: with a small max_rounds and a far target most matches end truncated."""
    options = {**preset, "episode": "match", "target_score": 500, "max_rounds": 2 if preset["rules"] == "classic" else 1}
    counts = _differential(options, num_games=8, steps=700, seed=21, smart_share=0.0)
    assert counts["truncated"] >= 4


def test_random_play_with_reshuffles_matches_the_aec_env():
    """Long random rounds: the wall, penalty stock reshuffles, the pile rebuilt from one card."""
    options = {"rules": "penalty", "num_players": 3, "episode": "match", "target_score": 30}
    counts = _differential(options, num_games=8, steps=500, seed=3, smart_share=0.0)
    assert counts["draw"] > 0


@pytest.mark.parametrize("preset", PRESETS[::2], ids=["classic-2", "penalty-3"])
def test_injected_decks_and_dealers_match_the_aec_env(preset):
    n = preset["num_players"]
    rng = np.random.default_rng(5)
    games = 6
    decks = [rng.permutation(52).tolist() if i % 3 else None for i in range(games)]
    decks[1] = [okgin_env.card_str(c) for c in decks[1]]  # texts are accepted too
    dealers = [i % n if i % 2 else None for i in range(games)]
    options = {**preset, "episode": "match", "target_score": 20}
    _differential(options, games, steps=120, seed=40, reset_options={"deck": decks, "dealer": dealers})
    batch = BatchEnv(games, **options)
    batch.reset(seed=40, options={"deck": decks, "dealer": dealers})
    for i, match in enumerate(batch.matches):
        if dealers[i] is not None:
            assert match.round.dealer == dealers[i]
        if decks[i] is not None:
            assert match.round.upcard == okgin_env.card_id(decks[i][n * match.config.hand_size])


# ----------------------------------------------------------------------------- seeding, auto-reset


def _play(batch: BatchEnv, steps: int, seed: int):
    rng = np.random.default_rng(seed)
    result = batch.reset(seed=seed)
    trace = [result.observations]
    for _ in range(steps):
        result = batch.step(random_legal_actions(result.action_masks, rng))
        trace.append(result.observations)
    return np.stack(trace)


def test_same_seed_same_games_and_game_i_is_seed_plus_i():
    a = _play(BatchEnv(6, episode="round"), 150, seed=9)
    b = _play(BatchEnv(6, episode="round"), 150, seed=9)
    assert np.array_equal(a, b)
    c = _play(BatchEnv(6, episode="round"), 150, seed=10)
    assert not np.array_equal(a[0], c[0])
    # Game i of seed 9 is game i - 1 of seed 10 (seeded with 9 + i): same first deal.
    assert np.array_equal(a[0][1:], c[0][:-1])


def test_unseeded_reset_continues_each_games_generator():
    batch = BatchEnv(3, rules="penalty", num_players=3, episode="round")
    envs = [okgin_env.raw_env(rules="penalty", num_players=3, episode="round") for _ in range(3)]
    batch.reset(seed=21)
    for i, env in enumerate(envs):
        env.reset(seed=21 + i)
    for _ in range(3):
        result = batch.reset()
        for i, env in enumerate(envs):
            env.reset()
            assert np.array_equal(env.observe(env.agent_selection)["observation"], result.observations[i])
    # Without any seed the games are dealt from fresh entropy: different games.
    fresh = BatchEnv(4).reset()
    assert len({row.tobytes() for row in fresh.observations}) == 4


def test_auto_reset_same_step_and_final_observations():
    batch = BatchEnv(8, episode="round", max_turns=6)  # every round is drawn after 6 discards
    result = batch.reset(seed=1)
    rng = np.random.default_rng(1)
    finished = 0
    layout = layout_for(2)
    for _ in range(40):
        result = batch.step(random_legal_actions(result.action_masks, rng))
        for i in np.flatnonzero(result.dones):
            finished += 1
            final = result.infos["final_obs"][i]
            assert final.shape == (2, batch.obs_size)
            assert np.all(final[:, layout.slices["phase"]] == [0, 0, 0, 1])  # round over, hands shown
            outcome = result.infos["round_outcome"][i]
            assert outcome["kind"] == "draw"
            assert np.all(result.rewards[i] == 0)
            # The returned row is the new episode's first observation: the upcard offer.
            assert np.all(result.observations[i, layout.slices["phase"]] == [1, 0, 0, 0])
            assert result.action_masks[i].nonzero()[0].tolist() == [1, 2]
        assert result.infos.get("_final_obs", result.dones).tolist() == result.dones.tolist()
    assert finished >= 8


def test_step_a_subset_of_games():
    full = BatchEnv(5, rules="penalty", num_players=4)
    part = BatchEnv(5, rules="penalty", num_players=4)
    first = full.reset(seed=4)
    part.reset(seed=4)
    rng = np.random.default_rng(0)
    actions = random_legal_actions(first.action_masks, rng)
    stepped = part.step(actions[[3, 1]], games=[3, 1])
    everything = full.step(actions)
    assert np.array_equal(stepped.observations, everything.observations[[3, 1]])
    assert np.array_equal(stepped.seats, everything.seats[[3, 1]])
    assert np.array_equal(part.observations[[3, 1]], everything.observations[[3, 1]])
    assert np.array_equal(part.observations[[0, 2, 4]], first.observations[[0, 2, 4]])  # untouched
    empty = part.step(np.zeros(0, dtype=np.int64), games=[])
    assert empty.observations.shape == (0, part.obs_size)


def test_illegal_and_malformed_actions_raise_and_change_nothing():
    batch = BatchEnv(3)
    with pytest.raises(RuntimeError, match="reset"):
        batch.step([0, 0, 0])
    first = batch.reset(seed=2)
    actions = random_legal_actions(first.action_masks, np.random.default_rng(0))
    bad = actions.copy()
    bad[1] = 60  # a knock, never legal at the upcard offer
    with pytest.raises(ValueError, match="game 1: action 60"):
        batch.step(bad)
    for wrong in (actions[:2], actions.astype(float), np.array([True, False, True]), np.array([1, 2, 999])):
        with pytest.raises(ValueError):
            batch.step(wrong)
    with pytest.raises(ValueError):
        batch.step(actions[:1], games=[5])
    assert np.array_equal(batch.observations, first.observations)
    assert np.array_equal(batch.step(actions).seats.shape, (3,))
    with pytest.raises(ValueError, match="unknown option"):
        BatchEnv(2, colour="red")
    with pytest.raises(ValueError, match="num_players"):
        BatchEnv(2, rules="classic", num_players=3)
    with pytest.raises(ValueError):
        BatchEnv(0)
    with pytest.raises(ValueError, match="deck"):
        BatchEnv(2).reset(options={"deck": [list(range(52))]})
    with pytest.raises(ValueError, match="dealer"):
        BatchEnv(2).reset(seed=0, options={"dealer": [0, 5]})
    with pytest.raises(ValueError, match="permutation"):
        BatchEnv(2).reset(seed=0, options={"deck": [None, list(range(51)) + [0]]})


def test_copy_false_returns_the_internal_buffers():
    batch = BatchEnv(2, copy=False)
    result = batch.reset(seed=0)
    again = batch.step(random_legal_actions(result.action_masks, np.random.default_rng(0)))
    assert again.observations is result.observations
    copying = BatchEnv(2)
    first = copying.reset(seed=0)
    assert copying.step(random_legal_actions(first.action_masks, np.random.default_rng(0))).observations is not first.observations


def test_dtypes_and_shapes():
    batch = BatchEnv(4, rules="penalty", num_players=3)
    result = batch.reset(seed=0)
    assert result.seats.dtype == np.int64 and result.seats.shape == (4,)
    assert result.observations.dtype == np.float32 and result.observations.shape == (4, layout_for(3).size)
    assert result.action_masks.dtype == np.int8 and result.action_masks.shape == (4, NUM_ACTIONS)
    assert result.rewards.dtype == np.float32 and result.rewards.shape == (4, 3)
    assert result.dones.dtype == bool
    assert batch.observation_space.shape == (layout_for(3).size,)


def test_knock_pre_check_never_rules_out_a_legal_knock():
    from okgin_env.rules.melds import knock_discards_of_mask

    rng = random.Random(0)
    hands = [sum(1 << c for c in rng.sample(range(52), rng.choice((8, 11, 11, 14)))) for _ in range(3000)]
    for _ in range(3000):  # meld-dense hands: sets and runs everywhere
        ranks = rng.sample(range(13), rng.choice((3, 4, 5)))
        hands.append(sum(1 << (s * 13 + r) for r in ranks for s in range(4) if rng.random() < 0.7) | 1)
    ruled_out = 0
    for hand in hands:
        for limit in (0, 1, 5, 10):
            if knock_ruled_out(hand, limit):
                ruled_out += 1
                assert knock_discards_of_mask(hand, limit) == [], (hand, limit)
    assert ruled_out > len(hands)  # it does rule out most hands


def test_random_legal_actions_is_uniform_over_the_mask():
    masks = np.zeros((20000, NUM_ACTIONS), dtype=np.int8)
    masks[:, [0, 1]] = 1
    masks[:10000, [5, 60]] = 1
    picks = random_legal_actions(masks, np.random.default_rng(0))
    assert set(picks[:10000]) == {0, 1, 5, 60} and set(picks[10000:]) == {0, 1}
    counts = np.bincount(picks[:10000], minlength=NUM_ACTIONS)[[0, 1, 5, 60]]
    assert counts.min() > 2300
    with pytest.raises(ValueError):
        random_legal_actions(np.zeros((1, NUM_ACTIONS), np.int8), np.random.default_rng(0))


# ----------------------------------------------------------------------------- single-agent view


class FirstLegal:
    """A deterministic opponent usable both per observation (GymEnv) and batched (VectorGymEnv)."""

    def act(self, observation):
        return int(np.flatnonzero(observation["action_mask"])[0])

    def act_batch(self, observations, masks):
        return np.argmax(masks, axis=1)


@pytest.mark.parametrize(
    "options, learner_seat",
    [
        ({"episode": "round"}, 0),
        ({"episode": "match", "target_score": 20}, "alternate"),
        ({"rules": "penalty", "num_players": 3, "episode": "round"}, "alternate"),
        ({"rules": "penalty", "num_players": 3, "episode": "match", "target_score": 30, "reward": "win"}, 1),
    ],
)
def test_vector_gym_env_matches_gym_env(options, learner_seat):
    num_envs, seed = 6, 31
    vector = VectorGymEnv(num_envs, opponents=FirstLegal(), learner_seat=learner_seat, **options)
    singles = [GymEnv(opponents=FirstLegal(), learner_seat=learner_seat, **options) for _ in range(num_envs)]
    observations, infos = vector.reset(seed=seed)
    views = [env.reset(seed=seed + i) for i, env in enumerate(singles)]
    rng = random.Random(seed)
    episodes = rounds = 0
    for t in range(250):
        actions = []
        for i, (observation, info) in enumerate(views):
            assert np.array_equal(observation, observations[i]), (t, i)
            assert np.array_equal(info["action_mask"], infos["action_mask"][i]), (t, i)
            assert np.array_equal(vector.action_masks()[i], info["action_mask"].astype(bool))
            legal = np.flatnonzero(info["action_mask"])
            knocks = legal[legal >= KNOCK_BASE]
            pool = knocks if knocks.size and rng.random() < 0.7 else legal
            actions.append(int(pool[rng.randrange(pool.size)]))
        observations, rewards, terminated, truncated, infos = vector.step(np.array(actions))
        assert not truncated.any()
        rounds += int(infos.get("_round_outcome", np.zeros(1)).sum())
        for i, env in enumerate(singles):
            observation, reward, done, _, info = env.step(actions[i])
            assert np.float32(reward) == rewards[i], (t, i, reward, rewards[i])
            assert done == terminated[i], (t, i)
            if done:
                episodes += 1
                assert np.array_equal(observation, infos["final_obs"][i]), (t, i)
                assert infos["final_info"][i]["round_outcome"] == info["round_outcome"]
                views[i] = env.reset()
            else:
                views[i] = (observation, info)
        assert np.array_equal(vector.batch.seats, vector.learner_seats)
    assert rounds >= 6 and episodes >= 1


@pytest.mark.parametrize("opponent", ["random", "simple", "search:rollouts=4", RandomBot(1), "first-legal-act"])
def test_vector_gym_env_opponents_run(opponent):
    if opponent == "first-legal-act":
        opponent = PerObservationOpponent(FirstLegal())
    env = VectorGymEnv(
        8, opponents=opponent, rules="penalty", num_players=3, episode="round", learner_seat="alternate", max_turns=30
    )
    assert isinstance(env, gymnasium.vector.VectorEnv)
    assert env.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    observations, infos = env.reset(seed=0)
    assert observations.shape == (8, layout_for(3).size) and env.observation_space.shape == observations.shape
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(120):
        masks = env.action_masks()
        assert masks.dtype == bool and masks.shape == (8, NUM_ACTIONS) and masks.any(axis=1).all()
        observations, rewards, terminated, truncated, infos = env.step(random_legal_actions(masks, rng))
        assert rewards.shape == (8,) and terminated.dtype == bool
        episodes += int(terminated.sum())
        if terminated.any():
            assert infos["_final_obs"].tolist() == terminated.tolist()
    assert episodes > 0
    env.close()


def test_vector_gym_env_seeded_reset_replays_with_named_opponent():
    def trace():
        env = VectorGymEnv(4, opponents="random", episode="round", max_turns=20)
        observations, _ = env.reset(seed=8)
        rng = np.random.default_rng(8)
        out = [observations]
        for _ in range(60):
            observations, rewards, *_ = env.step(random_legal_actions(env.action_masks(), rng))
            out.append(observations)
        return np.stack(out)

    assert np.array_equal(trace(), trace())
    with pytest.raises(ValueError, match="learner_seat"):
        VectorGymEnv(2, learner_seat=2)
    with pytest.raises(ValueError, match="opponent"):
        VectorGymEnv(2, opponents="nobody")


# ----------------------------------------------------------------------------- issue 14: buffers and infos


def test_copy_false_a_write_into_the_returned_mask_changes_no_legality():
    batch = BatchEnv(3, copy=False)
    result = batch.reset(seed=4)
    result.action_masks[:] = 1  # the caller scribbles on the buffer it was handed
    illegal = np.full(3, KNOCK_BASE + 5)  # a knock, never legal at the upcard offer
    with pytest.raises(ValueError, match="not legal"):
        batch.step(illegal)
    assert all(match.round.cards_accounted() == 52 for match in batch.matches)
    assert all(match.round.history == [] for match in batch.matches)
    again = batch.step(random_legal_actions(batch.action_masks, np.random.default_rng(0)))
    assert again.action_masks is result.action_masks  # still the one buffer, now rewritten
    assert np.array_equal(again.action_masks, batch.action_masks)
    part = batch.step(random_legal_actions(batch.action_masks[[1]], np.random.default_rng(1)), games=[1])
    assert np.array_equal(again.action_masks[1], part.action_masks[0])  # subset steps update it too


def test_latest_and_round_states_do_not_copy_and_cannot_be_written():
    batch = BatchEnv(4, rules="penalty", num_players=3)
    first = batch.reset(seed=6)
    seats, observations, masks = batch.latest()
    assert np.array_equal(observations, first.observations) and np.array_equal(masks, first.action_masks)
    for array in (seats, observations, masks):
        with pytest.raises(ValueError):
            array[0] = 0
    rows = batch.latest([2, 0])
    assert np.array_equal(rows[1], first.observations[[2, 0]]) and np.array_equal(rows[2], first.action_masks[[2, 0]])
    states = batch.round_states([3, 1])
    assert states[0] is batch.matches[3].round and states[1] is batch.matches[1].round
    assert batch.round_states() == [m.round for m in batch.matches]


def test_vector_gym_env_final_info_holds_its_own_round_outcome():
    env = VectorGymEnv(4, opponents="random", episode="round", max_turns=6)
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(50):
        _, _, terminated, _, infos = env.step(random_legal_actions(env.action_masks(), rng))
        for i in np.flatnonzero(terminated & infos.get("_round_outcome", np.zeros(4, bool))):
            final = infos["final_info"][i]["round_outcome"]
            assert final == infos["round_outcome"][i]
            final["points"].append(99)
            final["kind"] = "changed"
            assert infos["round_outcome"][i]["kind"] != "changed" and 99 not in infos["round_outcome"][i]["points"]
            return
    raise AssertionError("no episode ended")


# ----------------------------------------------------------------------------- the rules' masks


def test_legal_parts_and_discardable_are_the_legal_actions():
    """``RoundState.legal_parts`` (what the batch packs) is the rule behind ``legal_actions``."""
    from okgin_env.rules.melds import knock_discards_of_mask

    checked = Counter()
    for options in ({"rules": "classic"}, {"rules": "classic", "allow_discard_taken": True},
                    {"rules": "penalty", "num_players": 3}):
        env = okgin_env.raw_env(episode="round", **options)
        env.reset(seed=8)
        rng = random.Random(8)
        for _ in range(3000):
            if any(env.terminations.values()):
                env.reset(seed=rng.randrange(10**6))
            st = env.round_state
            small, discards, knocks = st.legal_parts()
            expected = st.legal_actions()
            got = [a for a in range(3) if small >> a & 1]
            got += [3 + c for c in range(52) if discards >> c & 1] + [55 + c for c in range(52) if knocks >> c & 1]
            assert got == expected
            assert st.discardable() == discards
            if st.phase is okgin_env.Phase.DISCARD:
                hand = st.hands[st.current]
                assert knocks == sum(1 << c for c in knock_discards_of_mask(hand, st.knock_limit, hand ^ discards))
                taken = st.taken_card >= 0
                checked["taken kept" if taken and not discards >> st.taken_card & 1 else "taken throwable" if taken else "no take"] += 1
                checked["knock"] += bool(knocks)
            env.step(_choose(env, env.observe(env.agent_selection)["action_mask"], rng, rng.random() < 0.5))
    assert min(checked.values()) > 20, checked


class _CountingOpponent:
    """A batch opponent that plays uniformly at random and records how many decisions it was asked for."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.calls: list[int] = []

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        self.calls.append(len(observations))
        return random_legal_actions(masks, self.rng)


def test_one_opponent_per_game_plays_only_its_own_games():
    first, second = _CountingOpponent(1), _CountingOpponent(2)
    opponents = [first, second, first, "simple"]
    vector = VectorGymEnv(4, opponents=opponents, rules="penalty", num_players=3, learner_seat="alternate")
    _, infos = vector.reset(seed=5)
    assert vector.opponents[0] is vector.opponents[2] and vector.opponents[1] is second
    with pytest.raises(AttributeError, match="different opponents"):
        vector.opponent
    rng = np.random.default_rng(0)
    for _ in range(300):
        _, _, _, _, infos = vector.step(random_legal_actions(infos["action_mask"], rng))
    # Games 0 and 2 share `first`: one call for both when both wait; never more than 2 decisions
    # per call for `first`, never more than 1 for `second`.
    assert first.calls and second.calls
    assert max(first.calls) <= 2 and max(second.calls) == 1


def test_per_game_opponent_list_is_checked_and_set_opponent_changes_one_game():
    with pytest.raises(ValueError, match="one opponent per game"):
        VectorGymEnv(3, opponents=["simple", "random"])
    with pytest.raises(ValueError, match="unknown player"):
        VectorGymEnv(2, opponents=["simple", "nobody"])
    vector = VectorGymEnv(2, opponents="simple")
    assert vector.opponents[0] is vector.opponents[1] is vector.opponent
    counting = _CountingOpponent(3)
    vector.set_opponent(1, counting)
    assert vector.opponents[1] is counting and vector.opponents[0] is not counting
    with pytest.raises(ValueError, match="allowed: 0..1"):
        vector.set_opponent(2, counting)
    with pytest.raises(ValueError, match="policy object"):
        vector.set_opponent(0, "random")
    _, infos = vector.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(50):
        _, _, _, _, infos = vector.step(random_legal_actions(infos["action_mask"], rng))
    assert counting.calls and max(counting.calls) == 1


def test_a_per_game_list_of_one_bot_plays_as_the_single_opponent():
    actions_rng = np.random.default_rng(4)
    single = VectorGymEnv(3, opponents="simple", learner_seat="alternate")
    listed = VectorGymEnv(3, opponents=["simple"] * 3, learner_seat="alternate")
    obs_a, info_a = single.reset(seed=9)
    obs_b, info_b = listed.reset(seed=9)
    for _ in range(200):
        assert np.array_equal(obs_a, obs_b) and np.array_equal(info_a["action_mask"], info_b["action_mask"])
        actions = random_legal_actions(info_a["action_mask"], actions_rng)
        obs_a, rew_a, term_a, _, info_a = single.step(actions)
        obs_b, rew_b, term_b, _, info_b = listed.step(actions)
        assert np.array_equal(rew_a, rew_b) and np.array_equal(term_a, term_b)


def test_an_out_of_range_action_is_named_as_given_whatever_its_integer_type():
    """A uint64 of 2**64 - 1 was named -1 (its int64 wrap) in the error."""
    batch = BatchEnv(2)
    batch.reset(seed=1)
    for dtype, value in ((np.uint64, 2**64 - 1), (np.uint64, 2**63), (np.int64, -1), (np.uint8, 200)):
        actions = np.array([2, value], dtype=dtype)  # game 0 passes on the upcard: legal
        with pytest.raises(ValueError, match=rf"^game 1: action {value} \(out of range 0\.\.106\) is not legal"):
            batch.step(actions)
    assert all(match.round.history == [] for match in batch.matches)


def test_reading_a_batch_before_reset_says_so():
    """seats, observations, action_masks and latest() gave zeros before any game was dealt."""
    batch = BatchEnv(2)
    for read in (lambda: batch.seats, lambda: batch.observations, lambda: batch.action_masks, batch.latest,
                 VectorGymEnv(2).action_masks):
        with pytest.raises(RuntimeError, match="call reset"):
            read()


def test_batch_observe_takes_one_seat_or_one_per_game():
    batch = BatchEnv(3)
    batch.reset(seed=0)
    assert batch.observe(0)[0].shape == batch.observe([0, 1, 0])[0].shape == (3, batch.obs_size)
    for seats in ([0, 1], [[0]]):
        with pytest.raises(ValueError, match=r"seats must be one seat for every game or one per game \(3\)"):
            batch.observe(seats)


def test_bad_sizes_and_options_are_named_as_the_vector_env_names_them():
    """Probe 6: num_envs=0 was refused as 'num_games', and the refusal of an unknown option listed
    BatchEnv's buffer options (copy, keep_outcomes) but not the vector env's own keywords."""
    from okgin_env import VectorGymEnv

    with pytest.raises(ValueError, match="^num_envs must be a positive int, got 0$"):
        VectorGymEnv(0)
    with pytest.raises(ValueError, match="illegal_action: VectorGymEnv raises a ValueError on an illegal action"):
        VectorGymEnv(2, illegal_action="terminate")
    for option in ({"copy": False}, {"keep_outcomes": True}, {"gin": 1}):
        with pytest.raises(ValueError, match=r"unknown option\(s\) .*; allowed: opponents, learner_seat, "
                                             r"opponent_seed, rules, num_players") as refused:
            VectorGymEnv(2, **option)
        assert "copy" not in str(refused.value).partition("allowed:")[2]
    assert VectorGymEnv(2, rules="penalty", num_players=3, max_reshuffles=1).num_envs == 2
