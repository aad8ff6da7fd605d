"""The env option ``observation="features"`` (okgin_env/features.py), the AEC env's ``state()`` /
``state_space`` (okgin_env/state.py) and the vector env's declared autoreset mode.

Feature values are checked against positions worked out by hand (deck injection) and against a
naive re-derivation from the rules on random play; no feature may depend on a card the seat has
not seen; every env passes its framework's checker with the option; the batch engine gives the
AEC env's feature observations step for step.
"""

from __future__ import annotations

import random
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from helpers import build_deck
from pettingzoo.test import api_test
from pettingzoo.test.state_test import test_state as pettingzoo_state_test
from pettingzoo.test.state_test import test_state_space as pettingzoo_state_space_test
from test_vector import _differential

import okgin_env
from okgin_env.batch import BatchEnv
from okgin_env.bots.random_bot import random_legal_actions
from okgin_env.env import ResetRequiredError
from okgin_env.features import (
    FEATURE_PARTS,
    FEATURE_SIZE,
    decode_features,
    feature_bounds,
    observation_features,
    with_features,
)
from okgin_env.gym_env import GymEnv
from okgin_env.observation import decode, encode, layout_for, layout_of, num_players_of, view
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from okgin_env.rules.cards import card_id, card_str, parse_cards
from okgin_env.rules.config import make_config
from okgin_env.rules.infoset import InfoSet
from okgin_env.rules.melds import deadwood
from okgin_env.rules.round import Phase
from okgin_env.state import STATE_VERSION, state_size, state_slices
from okgin_env.vector import VectorGymEnv

TABLES = [("classic", 2), ("penalty", 2), ("penalty", 3), ("penalty", 4)]


def features_of(observation) -> dict:
    """The decoded feature slices of an observation dict or array (features layout)."""
    flat = observation["observation"] if isinstance(observation, dict) else observation
    return decode_features(flat[-FEATURE_SIZE:])


# ----------------------------------------------------------------------------- layout and option


def test_layout_appends_named_feature_slices_to_the_card_layout():
    assert FEATURE_SIZE == 425 == sum(width for _, width in FEATURE_PARTS)
    for n in (2, 3, 4):
        cards, features = layout_for(n), layout_for(n, "features")
        assert features.size == cards.size + FEATURE_SIZE
        assert list(features.slices)[: len(cards.slices)] == list(cards.slices)
        assert all(features.slices[name] == part for name, part in cards.slices.items())
        assert features.slices["discard_legal"].start == cards.size
        assert features.slices["can_gin"].stop == features.size
        assert layout_of(np.zeros(features.size)) == features and layout_of(np.zeros(cards.size)) == cards
        assert num_players_of(np.zeros(features.size)) == n
    assert [layout_for(n, "features").size for n in (2, 3, 4)] == [803, 910, 1017]


@pytest.mark.parametrize("bad", ["feature", "Cards", None, 1, ["cards"]])
def test_a_bad_observation_option_is_refused_naming_the_allowed_values(bad):
    makers = [
        lambda: okgin_env.env(observation=bad),
        lambda: okgin_env.raw_env(observation=bad),
        lambda: GymEnv(observation=bad),
        lambda: BatchEnv(2, observation=bad),
        lambda: VectorGymEnv(2, observation=bad),
        lambda: gymnasium.make("OklahomaGin-v0", observation=bad),
        lambda: layout_for(2, bad),
    ]
    for make in makers:
        with pytest.raises(ValueError, match=r"observation=.*allowed: 'cards', 'features'"):
            make()


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_the_features_observation_starts_with_the_cards_observation(table):
    rules, n = table
    cards = okgin_env.raw_env(rules=rules, num_players=n, episode="round")
    features = okgin_env.raw_env(rules=rules, num_players=n, episode="round", observation="features")
    cards.reset(seed=4)
    features.reset(seed=4)
    rng = np.random.default_rng(4)
    size = layout_for(n).size
    for _ in range(60):
        if cards.terminations[cards.agent_selection]:
            break
        for agent in cards.agents:
            plain, rich = cards.observe(agent), features.observe(agent)
            assert rich["observation"].shape == (size + FEATURE_SIZE,) and rich["observation"].dtype == np.float32
            assert np.array_equal(rich["observation"][:size], plain["observation"])
            assert np.array_equal(rich["action_mask"], plain["action_mask"])
            assert view(rich) == view(plain)  # bots and tools read either layout
        action = int(rng.choice(np.flatnonzero(cards.observe(cards.agent_selection)["action_mask"])))
        cards.step(action)
        features.step(action)


# ----------------------------------------------------------------------------- values worked out by hand

# Classic, seat 0 deals, so seat 1 is offered the upcard JC (knock limit 10) first.
SEAT_1 = "AS 2S 3S 7H 7D 7C 9C TC KD QH"  # AS-3S run, 7s set; 9C TC KD QH loose: 39
SEAT_0 = "KH 4D 5D 6D 2H 3H 4H 8S 9S 5C"


def scripted_env(seat_0: str = SEAT_0, stock: str = "8C", seed: int = 0):
    env = okgin_env.raw_env(observation="features", episode="round")
    deck = build_deck([seat_0, SEAT_1], "JC", stock.split(), dealer=0)
    env.reset(seed=seed, options={"deck": deck, "dealer": 0})
    return env


# seat 1 passes JC, seat 0 passes, seat 1 draws 8C and throws QH, seat 0 takes QH and throws KH.
SCRIPT = [PASS, PASS, DRAW_STOCK, DISCARD_BASE + card_id("QH"), TAKE_DISCARD, DISCARD_BASE + card_id("KH")]


def test_features_of_the_upcard_offer():
    env = scripted_env()
    f = features_of(env.observe("player_1"))
    assert f["draw_take_pass_legal"] == ["take discard", "pass"]
    assert f["discard_legal"] == f["knock_legal"] == [] and f["deadwood_after"] == f["knock_margin"] == {}
    assert f["hand_deadwood"] == 39
    # Taking JC makes 9C TC JC a run: KD QH remain, one of them thrown: 10, within the knock limit 10.
    assert f["take_deadwood_after"] == 10 and f["take_within_limit"] is True
    assert f["best_deadwood_after"] == 0 and f["can_knock"] is False and f["can_gin"] is False
    # Candidates: the hand and the upcard. Unseen: all but the hand and the pile (JC).
    # E.g. 2S: 2H 2D 2C and 4S (AS 3S are held); 7C: 7S, 5C 6C 8C; JC: JS JH JD, QC KC.
    assert f["unseen_partners"] == {
        "AS": 3, "2S": 4, "3S": 5, "7H": 5, "QH": 6, "7D": 5, "KD": 5, "7C": 4, "9C": 4, "TC": 5, "JC": 5,
    }
    assert f["hand_partners"] == {"AS": 2, "2S": 2, "3S": 2, "7H": 2, "7D": 2, "7C": 3, "9C": 2, "TC": 1, "JC": 2}
    assert f["opponent_wants"] == f["opponent_avoids"] == []


def test_features_of_a_discard_decision_with_knocks():
    env = scripted_env()
    for action in SCRIPT[:3]:
        env.step(action)
    assert env.agent_selection == "player_1" and env.round_state.phase is Phase.DISCARD
    f = features_of(env.observe("player_1"))
    hand = parse_cards(SEAT_1 + " 8C")
    expected_after = {card_str(c): deadwood([x for x in hand if x != c]) for c in hand}
    # By hand: 7H 7D 7C + 8C 9C TC + AS 2S 3S leave KD QH (20); throwing KD or QH leaves 10.
    assert expected_after == {
        "AS": 25, "2S": 24, "3S": 23, "7H": 27, "QH": 10, "7D": 27, "KD": 10, "7C": 34, "8C": 39, "9C": 38, "TC": 34,
    }
    assert f["deadwood_after"] == {name: value for name, value in expected_after.items() if value}
    assert sorted(f["discard_legal"], key=card_id) == sorted(expected_after, key=card_id)  # nothing taken from the pile
    assert f["knock_legal"] == ["QH", "KD"]
    assert f["knock_margin"] == {}  # both leave exactly the limit: margin 0 (the knock_legal plane says they are legal)
    assert f["hand_deadwood"] == 20 and f["best_deadwood_after"] == 10
    assert f["can_knock"] is True and f["can_gin"] is False
    assert f["draw_take_pass_legal"] == [] and f["take_deadwood_after"] == 0 and f["take_within_limit"] is False
    assert f["unseen_partners"]["8C"] == 4 and f["hand_partners"]["8C"] == 3  # 8S 8H 8D 6C; 7C 9C TC
    # The dealer passed the upcard JC: cards of its rank or next to it in clubs are avoided.
    assert f["opponent_avoids"] == ["TC"]
    # The discard leaving the least deadwood lines up with its action ids.
    obs = env.observe("player_1")["observation"]
    start = layout_for(2, "features").slices["deadwood_after"].start
    assert obs[start + card_id("KD")] == np.float32(10 / 100) and obs[start + card_id("8C")] == np.float32(39 / 100)
    assert env.observe("player_1")["action_mask"][KNOCK_BASE + card_id("KD")] == 1


def test_features_after_an_opponent_takes_a_card_and_throws_one():
    env = scripted_env()
    for action in SCRIPT:
        env.step(action)
    assert env.agent_selection == "player_1" and env.round_state.phase is Phase.DRAW
    f = features_of(env.observe("player_1"))
    assert f["draw_take_pass_legal"] == ["draw stock", "take discard"]
    # Seat 0 holds QH (known): KH is a Q-heart neighbour; seat 0 threw KH and passed JC.
    assert f["opponent_wants"] == ["KH"]
    assert f["opponent_avoids"] == ["KH", "KD", "TC"]
    assert f["hand_deadwood"] == 10 and f["take_deadwood_after"] == 10 and f["take_within_limit"] is True
    assert "KH" in f["unseen_partners"] and "QH" not in f["unseen_partners"]
    # The seat not to act sees no legality: its mask is zeros.
    g = features_of(env.observe("player_0"))
    assert g["draw_take_pass_legal"] == [] and g["discard_legal"] == [] and g["can_knock"] is False
    assert g["opponent_wants"] == []  # seat 1 is known to hold no card
    assert set(g["hand_partners"]) <= set(card_str(c) for c in env.unwrapped.hand("player_0"))


def test_a_gin_and_a_gin_only_round():
    # Ace upcard: gin only. With AS, seat 1 holds AS-3S, 4H-6H, the 7s and KC KD.
    seat_1 = "2S 3S 4H 5H 6H 7D 7C 7S KC KD"
    env = okgin_env.raw_env(observation="features", episode="round")
    env.reset(options={"deck": build_deck([None, seat_1], "AS", ["KH"], dealer=0), "dealer": 0})
    f = features_of(env.observe("player_1"))
    assert env.knock_limit == 0
    # With AS: AS 2S 3S, 4H-6H, 7s set; KC KD left: throw one, 10 > 0: no knock.
    assert f["take_deadwood_after"] == 10 and f["take_within_limit"] is False
    env.step(TAKE_DISCARD)
    f = features_of(env.observe("player_1"))
    assert f["discard_legal"] and "AS" not in f["discard_legal"]  # the taken card may not be thrown
    assert f["can_knock"] is False and f["knock_legal"] == []
    env2 = okgin_env.raw_env(observation="features", episode="round")
    seat_1 = "2S 3S 4H 5H 6H 7D 7C 7S KC KD"
    env2.reset(options={"deck": build_deck([None, seat_1], "AS", ["KH"], dealer=0), "dealer": 0})
    env2.step(PASS)
    env2.step(PASS)
    env2.step(DRAW_STOCK)  # KH: K-K-K set, 2S 3S left (5): no gin
    f = features_of(env2.observe("player_1"))
    assert f["deadwood_after"]["2S"] == 3 and f["can_gin"] is False and f["knock_legal"] == []
    hand = "AS 2S 3S 4S 4H 5H 6H 7D 7C 7S"  # no deadwood: throwing the drawn KD is gin
    env3 = okgin_env.raw_env(observation="features", episode="round")
    env3.reset(options={"deck": build_deck([None, hand], "9D", ["KD"], dealer=0), "dealer": 0})
    for action in (PASS, PASS, DRAW_STOCK):
        env3.step(action)
    f = features_of(env3.observe("player_1"))
    assert f["can_gin"] is True and f["deadwood_after"].get("KD") is None and "KD" in f["knock_legal"]
    assert f["knock_margin"]["KD"] == 9 and f["best_deadwood_after"] == 0


# ----------------------------------------------------------------------------- nothing hidden


def test_two_deals_differing_only_in_unseen_cards_give_identical_features():
    """Seat 0's hidden cards (all but KH, which it throws) and the stock below 8C are dealt
    differently; seat 1 must see exactly the same, features included, at every step."""
    hidden = [c for c in range(52) if card_str(c) not in set(SEAT_1.split()) | {"JC", "8C", "KH", "QH"}]
    rng = random.Random(7)
    for trial in range(5):
        shuffled = hidden[:]
        rng.shuffle(shuffled)
        other_hand = "KH " + " ".join(card_str(c) for c in shuffled[:9])
        other_stock = "8C " + " ".join(card_str(c) for c in shuffled[9:])
        a, b = scripted_env(), scripted_env(other_hand, other_stock, seed=trial)
        assert a.hand("player_0") != b.hand("player_0")
        batch = BatchEnv(2, observation="features", episode="round")
        batch.reset(options={"deck": [build_deck([SEAT_0, SEAT_1], "JC", ["8C"], dealer=0),
                                      build_deck([other_hand, SEAT_1], "JC", other_stock.split(), dealer=0)],
                             "dealer": 0})
        for action in [None, *SCRIPT]:
            if action is not None:
                a.step(action)
                b.step(action)
                batch.step(np.array([action, action]))
            seen_a, seen_b = a.observe("player_1"), b.observe("player_1")
            assert np.array_equal(seen_a["observation"], seen_b["observation"]), action
            assert np.array_equal(seen_a["action_mask"], seen_b["action_mask"])
            observations, _ = batch.observe(1)
            assert np.array_equal(observations[0], observations[1]) and np.array_equal(observations[0], seen_a["observation"])


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_features_agree_on_every_world_consistent_with_what_the_seat_knows(table):
    """On random play, the seat to act's features (both paths: from the observation and from the
    batch engine's packed words) are the same in a re-dealt world that agrees with its knowledge."""
    from okgin_env.features import fill_features, parts_of_words
    from okgin_env.observation import PackedEncoder

    rules, n = table
    config = make_config(rules, num_players=n)
    encoder = PackedEncoder(n, config.target_score)
    env = okgin_env.raw_env(rules=rules, num_players=n, observation="features", episode="round", max_turns=25)
    rng, pick = random.Random(1), np.random.default_rng(1)
    checked = 0
    for episode in range(4):
        env.reset(seed=episode)
        while not env.terminations[env.agent_selection]:
            state = env.round_state
            seat = state.current
            real = env.observe(env.agent_selection)
            world = InfoSet.of_state(state).sample_state(rng)  # the seat to act is its seat 0
            scores = [env.match.round_totals[(seat + k) % n] for k in range(n)]
            card_obs = encode(world, scores, config.target_score, 0)
            assert np.array_equal(with_features(card_obs, world.legal_mask()), real["observation"])
            out = np.zeros((1, FEATURE_SIZE))
            fill_features(parts_of_words(encoder.pack_acting([world], [0]), encoder), out)
            assert np.array_equal(out[0].astype(np.float32), real["observation"][-FEATURE_SIZE:])
            checked += 1
            env.step(int(pick.choice(np.flatnonzero(real["action_mask"]))))
    assert checked > 60


# ----------------------------------------------------------------------------- against the rules, naively


def _partners(card: int, cards) -> int:
    rank, suit = card % 13, card // 13
    return sum(1 for k in cards if k != card and (k % 13 == rank or (k // 13 == suit and abs(k % 13 - rank) <= 2)))


def _reference(observation: dict) -> dict:
    """The documented meaning of every feature, recomputed from the decoded observation with the
    public solver, card by card."""
    v = view(observation)
    hand = [c for c in range(52) if v.hand >> c & 1]
    known = [c for c in range(52) if any(m >> c & 1 for m in v.opponent_known)]
    passed = [c for c in range(52) if any(m >> c & 1 for m in v.opponent_passed)]
    pile = [c for c in range(52) if v.discard_pile >> c & 1]
    unseen = [c for c in range(52) if c not in hand and c not in pile and c not in known]
    can_take = TAKE_DISCARD in v.legal and v.discard_top >= 0
    candidates = hand + ([v.discard_top] if can_take else [])
    discards, knocks = v.legal_discards(), v.legal_knocks()
    after = {c: deadwood([x for x in hand if x != c]) for c in set(discards) | set(knocks)}

    def near(c, cards, distance):
        return any(k % 13 == c % 13 or (k // 13 == c // 13 and abs(k % 13 - c % 13) <= distance) for k in cards)

    take = min(deadwood([x for x in hand + [v.discard_top] if x != c]) for c in hand + [v.discard_top]) if can_take else 0
    return {
        "discard_legal": sorted(card_str(c) for c in discards),
        "knock_legal": sorted(card_str(c) for c in knocks),
        "deadwood_after": {card_str(c): d for c, d in after.items() if d},
        "knock_margin": {card_str(c): v.knock_limit - after[c] for c in knocks if v.knock_limit - after[c]},
        "unseen_partners": {card_str(c): _partners(c, unseen) for c in candidates if _partners(c, unseen)},
        "hand_partners": {card_str(c): _partners(c, hand) for c in candidates if _partners(c, hand)},
        "opponent_wants": sorted(card_str(c) for c in candidates if near(c, known, 2)),
        "opponent_avoids": sorted(card_str(c) for c in candidates if near(c, passed, 1)),
        "draw_take_pass_legal": [name for a, name in enumerate(["draw stock", "take discard", "pass"]) if a in v.legal],
        "hand_deadwood": deadwood(hand),
        "take_deadwood_after": take,
        "take_within_limit": can_take and take <= v.knock_limit,
        "best_deadwood_after": min(after.values()) if discards else 0,
        "can_knock": bool(knocks),
        "can_gin": any(after[c] == 0 for c in knocks),
    }


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_the_row_by_row_and_vectorized_evaluators_agree_bit_for_bit(table):
    from okgin_env.features import planes
    from okgin_env.features.facts import _MELD_PARTNERS, _partner_offsets

    rules, n = table
    batch = BatchEnv(64, rules=rules, num_players=n, max_rounds=3)
    step = batch.reset(seed=21)
    rng = np.random.default_rng(21)
    encoder = batch._encoder
    for _ in range(30):
        words = encoder.pack_seats(batch._rounds, list(range(64)), rng.integers(0, n, 64).tolist())
        parts = planes.parts_of_words(words, encoder)
        one, other = np.full((64, FEATURE_SIZE), 7.0), np.full((64, FEATURE_SIZE), 7.0)
        planes._fill_row_by_row(parts, one)
        planes._fill_vectorized(parts, other)
        assert np.array_equal(one, other)
        step = batch.step(random_legal_actions(step.action_masks, rng))
    # The vectorized partner counts (offset masks summed) are the partner relation itself.
    for mask in rng.integers(0, 1 << 52, size=300, dtype=np.int64).tolist():
        offsets = _partner_offsets(mask)
        for card in range(52):
            assert sum(o >> card & 1 for o in offsets) == (_MELD_PARTNERS[card] & mask).bit_count()


def _comparable(features: dict) -> dict:
    return {name: sorted(value) if isinstance(value, list) and name != "draw_take_pass_legal" else value
            for name, value in features.items()}


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_every_feature_means_what_the_docs_say_on_random_play(table):
    rules, n = table
    batch = BatchEnv(16, rules=rules, num_players=n, observation="features", max_rounds=4)
    step = batch.reset(seed=11)
    rng = np.random.default_rng(11)
    low, high = batch.observation_space.low, batch.observation_space.high
    for t in range(40):
        assert (step.observations >= low).all() and (step.observations <= high).all()
        for i in range(0, 16, 3):
            observation = {"observation": step.observations[i], "action_mask": step.action_masks[i]}
            assert _comparable(features_of(observation)) == _comparable(_reference(observation)), (t, i)
        actions = random_legal_actions(step.action_masks, rng)
        knocks = [np.flatnonzero(m[KNOCK_BASE:]) for m in step.action_masks]
        actions = np.array([KNOCK_BASE + k[0] if k.size and rng.random() < 0.5 else a for a, k in zip(actions, knocks)])
        step = batch.step(actions)


def test_observation_features_of_a_cards_dict_and_the_decoded_text():
    env = scripted_env()
    plain = okgin_env.raw_env(episode="round")
    plain.reset(options={"deck": build_deck([SEAT_0, SEAT_1], "JC", ["8C"], dealer=0), "dealer": 0})
    cards = plain.observe("player_1")
    assert np.array_equal(observation_features(cards), env.observe("player_1")["observation"][-FEATURE_SIZE:])
    parts = decode(env.observe("player_1"))
    assert parts["hand"] == SEAT_1.split() or set(parts["hand"]) == set(SEAT_1.split())
    assert parts["take_deadwood_after"] == 10 and parts["legal"] == ["take discard", "pass"]
    text = okgin_env.observation.to_text(env.observe("player_1"))
    assert "take_deadwood_after: 10" in text and "JC:5" in text
    with pytest.raises(ValueError, match="425"):
        decode_features(np.zeros(3))


# ----------------------------------------------------------------------------- every env, its checkers


def _no_warnings(run) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("options", [{}, {"rules": "penalty", "num_players": 3}, {"episode": "round", "reward": "win"}])
@pytest.mark.parametrize("observation", ["cards", "features"])
def test_check_env_passes_for_every_observation_option(options, observation):
    env = GymEnv(observation=observation, **options)
    assert np.isfinite(env.observation_space.low).all() and np.isfinite(env.observation_space.high).all()
    assert (env.observation_space.low < env.observation_space.high).all()
    assert _no_warnings(lambda: check_env(env, skip_render_check=True)) == []
    made = gymnasium.make("OklahomaGin-v0", observation=observation, **options)
    check_env(made.unwrapped, skip_render_check=True)


@pytest.mark.parametrize("options", [{"episode": "round"}, {"rules": "penalty", "num_players": 4, "episode": "round"}])
def test_pettingzoo_api_test_passes_with_features(options):
    api_test(okgin_env.env(observation="features", **options), num_cycles=200)


def test_spaces_agree_and_are_finite_everywhere():
    config = make_config("penalty", num_players=3)
    low, high = feature_bounds(config)
    assert low.shape == high.shape == (FEATURE_SIZE,) and (high > low).all()
    spaces = [
        okgin_env.raw_env(rules="penalty", num_players=3, observation="features").observation_space("player_0")["observation"],
        GymEnv(rules="penalty", num_players=3, observation="features").observation_space,
        BatchEnv(2, rules="penalty", num_players=3, observation="features").observation_space,
        VectorGymEnv(2, rules="penalty", num_players=3, observation="features").single_observation_space,
    ]
    for space in spaces:
        assert space.shape == (layout_for(3, "features").size,) and np.isfinite(space.high).all()
        assert np.array_equal(space.low, spaces[0].low) and np.array_equal(space.high, spaces[0].high)
        assert np.array_equal(space.high[-FEATURE_SIZE:], high)


@pytest.mark.parametrize("preset", [{"rules": "classic", "num_players": 2}, {"rules": "penalty", "num_players": 3}],
                         ids=["classic-2", "penalty-3"])
def test_batch_matches_the_aec_env_with_features(preset):
    counts = _differential({**preset, "observation": "features", "episode": "round", "max_turns": 40}, 6, 150, seed=5,
                           observe_every=4)
    assert counts["episodes"] >= 6


class FirstLegal:
    def act(self, observation):
        return int(np.flatnonzero(observation["action_mask"])[0])


def test_vector_and_gym_envs_give_the_same_feature_observations():
    options = {"episode": "round", "observation": "features", "max_turns": 30}
    vector = VectorGymEnv(3, opponents=FirstLegal(), **options)
    singles = [GymEnv(opponents=FirstLegal(), **options) for _ in range(3)]
    observations, infos = vector.reset(seed=2)
    views = [env.reset(seed=2 + i) for i, env in enumerate(singles)]
    rng = np.random.default_rng(2)
    episodes = 0
    for t in range(80):
        actions = []
        for i, (observation, info) in enumerate(views):
            assert observation.shape == vector.single_observation_space.shape
            assert np.array_equal(observation, observations[i]), (t, i)
            assert np.array_equal(info["action_mask"], infos["action_mask"][i])
            actions.append(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        observations, _, terminated, _, infos = vector.step(np.array(actions))
        for i, env in enumerate(singles):
            observation, _, done, _, info = env.step(actions[i])
            if done:
                episodes += 1
                assert np.array_equal(observation, infos["final_obs"][i])
                views[i] = env.reset()
            else:
                views[i] = (observation, info)
    assert episodes >= 3


@pytest.mark.parametrize("opponent", ["simple", "lookahead", "random"])
def test_bots_play_against_a_feature_learner(opponent):
    env = GymEnv(opponents=opponent, observation="features", episode="round")
    observation, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(200):
        observation, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        assert env.observation_space.contains(observation)
        if terminated or truncated:
            observation, info = env.reset()
    vector = VectorGymEnv(4, opponents=opponent, observation="features", episode="round")
    vector.reset(seed=0)
    for _ in range(30):
        vector.step(random_legal_actions(vector.action_masks(), rng))


# ----------------------------------------------------------------------------- autoreset mode


def test_the_vector_env_declares_and_does_same_step_autoreset():
    """Gymnasium 1.x ``AutoresetMode.SAME_STEP``: the step that ends an episode returns the new
    episode's first observation (the last one is in ``infos["final_obs"]``); the next action is
    played in the new episode at once, never swallowed by a reset step (``NEXT_STEP``)."""
    vector = VectorGymEnv(4, opponents="random", episode="round", max_turns=6)
    assert gymnasium.vector.AutoresetMode(vector.metadata["autoreset_mode"]) is gymnasium.vector.AutoresetMode.SAME_STEP
    observations, infos = vector.reset(seed=0)
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(200):
        observations, rewards, terminated, truncated, infos = vector.step(random_legal_actions(vector.action_masks(), rng))
        assert not truncated.any()
        assert infos.get("_final_obs", np.zeros(4, bool)).tolist() == terminated.tolist()
        for i in np.flatnonzero(terminated):
            ends += 1
            assert decode(infos["final_obs"][i])["phase"] == "over"
            # Already the next episode's first decision (NEXT_STEP would return the final one here
            # and the new one a step later, ignoring that step's action).
            first = decode({"observation": observations[i], "action_mask": infos["action_mask"][i]})
            assert first["phase"] in ("offer", "draw") and first["stock_size"] == 31 and first["scores"] == [0, 0]
            assert first["acting_seat"] == 0 and first["legal"]
    assert ends >= 4


# ----------------------------------------------------------------------------- state() and state_space


def test_state_holds_the_full_state_by_absolute_seat():
    env = okgin_env.env(episode="round")
    deck = build_deck([SEAT_0, SEAT_1], "JC", ["8C", "4C"], dealer=0)
    with pytest.raises(ResetRequiredError):
        env.unwrapped.state()
    env.reset(options={"deck": deck, "dealer": 0})
    state = env.state()
    at = state_slices(2)
    assert state.shape == env.state_space.shape == (state_size(2),) == (537,) and state.dtype == np.float32
    assert STATE_VERSION == 1 and env.state_space.contains(state)

    def cards(name):
        return sorted(card_str(c) for c in np.flatnonzero(state[at[name]]))

    assert cards("hand_0") == sorted(SEAT_0.split()) and cards("hand_1") == sorted(SEAT_1.split())
    stock = env.unwrapped.round_state.stock
    order = state[at["stock_order"]]
    assert order[card_id("8C")] == np.float32(1 / 52) and order[card_id("4C")] == np.float32(2 / 52)
    assert sorted(np.flatnonzero(order).tolist()) == sorted(stock) and len(stock) == 31
    assert cards("discard_order") == cards("upcard") == ["JC"]
    assert state[at["knock_limit"]][0] == np.float32(1.0) and state[at["stock_size"]][0] == np.float32(31 / 52)
    assert state[at["phase"]].tolist() == [1, 0, 0, 0]
    assert state[at["current_seat"]].tolist() == [0, 1] and state[at["dealer"]].tolist() == [1, 0]
    for action in SCRIPT[:4]:  # seat 1 draws 8C and throws QH
        env.step(action)
    state = env.state()
    assert "8C" in cards("hand_1") and "QH" not in cards("hand_1")
    assert state[at["stock_order"]][card_id("4C")] == np.float32(1 / 52)
    assert state[at["discard_order"]][card_id("QH")] == np.float32(1 / 52)
    assert state[at["discard_order"]][card_id("JC")] == np.float32(2 / 52)
    assert cards("passed_0") == ["JC"] and cards("passed_1") == ["JC", "QH"]
    env.step(TAKE_DISCARD)
    state = env.state()
    assert cards("known_0") == ["QH"] and cards("taken_card") == ["QH"]
    assert state[at["phase"]].tolist() == [0, 0, 1, 0] and state[at["current_seat"]].tolist() == [1, 0]
    assert state[at["discards"]][0] == np.float32(1 / 500)
    # Observations stay as they were: the state is an extra, never part of them.
    assert env.observe("player_1")["observation"].shape == (layout_for(2).size,)


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_state_passes_pettingzoo_state_tests_through_whole_matches(table):
    rules, n = table
    env = okgin_env.env(rules=rules, num_players=n, illegal_action="terminate")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pettingzoo_state_space_test(env)
    pettingzoo_state_test(env, num_cycles=50)
    env = okgin_env.env(rules=rules, num_players=n, target_score=30)
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    steps = 0
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        state = env.state()
        assert env.state_space.contains(state)
        raw = env.unwrapped
        at = state_slices(n)
        for seat in range(n):
            assert np.flatnonzero(state[at[f"hand_{seat}"]]).tolist() == raw.round_state.hand(seat)
        steps += 1
        env.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    assert steps > 50
