"""Round states built from parts and from what one seat knows (``RoundState.from_parts``,
``RoundState.copy``, ``okgin_env.rules.infoset``): a state rebuilt from the parts of a state reached
by play is that state (same legal actions, observations and playouts), a determinization shows
its seat exactly the information set it came from, and bad parts are refused with a ValueError."""

from __future__ import annotations

import copy
import dataclasses
import random

import numpy as np
import pytest

from okgin_env.bots import view
from okgin_env.bots.search import playout
from okgin_env.observation import encode
from okgin_env.rules.config import make_config
from okgin_env.rules.infoset import InfoSet
from okgin_env.rules.round import Phase, RoundState

from tests.helpers import greedy_action, random_action, snapshot

TABLES = [("classic", 2), ("penalty", 2), ("penalty", 3), ("penalty", 4)]


def reached(rules: str, num_players: int, count: int, seed: int) -> list[RoundState]:
    """``count`` states where a seat must act, by mixed random/greedy play (random play reaches the wall)."""
    config = make_config(rules, num_players=num_players)
    rng = np.random.default_rng(seed)
    found: list[RoundState] = []
    while len(found) < count:
        state = RoundState(config, rng.permutation(52).tolist(), int(rng.integers(num_players)), np.random.default_rng(seed))
        greedy = rng.random()
        while not state.is_over and len(found) < count:
            found.append(state.clone())
            state.apply(greedy_action(state) if rng.random() < greedy else random_action(state, rng))
    return found


@pytest.fixture(scope="module")
def states():
    return {table: reached(*table, count=400, seed=3 + i) for i, table in enumerate(TABLES)}


def parts_of(state: RoundState) -> dict:
    """Every part ``RoundState.from_parts`` takes, read from an engine state."""
    return dict(
        hands=state.hands,
        stock=state.stock,
        discard_pile=state.discard_pile,
        upcard=state.upcard,
        dealer=state.dealer,
        current=state.current,
        phase=state.phase,
        knock_limit=state.knock_limit,
        taken_card=state.taken_card,
        known=state.known,
        passed=state.passed,
        offers_declined=state.offers_declined,
        must_draw_stock=state.must_draw_stock,
        discards=state.discards,
        reshuffles=state.reshuffles,
    )


def observations(state: RoundState) -> list[np.ndarray]:
    return [encode(state, [0] * state.num_players, 100, seat) for seat in range(state.num_players)]


# ----------------------------------------------------------------------------- from_parts


def test_the_states_cover_every_phase_and_reshuffles(states):
    every = [s for table in states.values() for s in table]
    assert {s.phase for s in every} == {Phase.OFFER, Phase.DRAW, Phase.DISCARD}
    assert any(s.reshuffles for s in every) and any(s.must_draw_stock for s in every)
    assert any(s.taken_card >= 0 for s in every) and any(s.phase is Phase.DISCARD and not s.discard_pile for s in every)


def test_a_state_rebuilt_from_its_parts_is_the_state(states):
    for table in states.values():
        for i, state in enumerate(table[::2]):
            rebuilt = RoundState.from_parts(state.config, **parts_of(state), rng=copy.deepcopy(state.rng))
            assert set(vars(rebuilt)) == set(vars(state))  # every field the engine's constructor makes
            assert snapshot(rebuilt) == snapshot(state)[:10] + (0,) + snapshot(state)[11:]  # no history
            assert rebuilt.legal_actions() == state.legal_actions()
            assert (rebuilt.legal_mask() == state.legal_mask()).all()
            for got, expected in zip(observations(rebuilt), observations(state)):
                assert (got == expected).all()
            original = state.clone()
            playout(rebuilt, random.Random(i))
            playout(original, random.Random(i))
            assert rebuilt.history == original.history[len(state.history) :]
            assert rebuilt.outcome.to_dict() == original.outcome.to_dict()


def test_from_parts_defaults_fill_what_play_would():
    config = make_config("penalty", num_players=3)
    dealt = RoundState(config, list(range(52)), 2, np.random.default_rng(0))
    parts = parts_of(dealt)
    for name in ("knock_limit", "known", "passed", "offers_declined", "taken_card", "discards", "reshuffles", "must_draw_stock"):
        del parts[name]
    rebuilt = RoundState.from_parts(config, **parts)
    assert snapshot(rebuilt) == snapshot(dealt) and rebuilt.knock_limit == dealt.knock_limit
    dealt.apply(dealt.legal_actions()[-1])  # the first seat passes the upcard: the next one is offered it
    rebuilt = RoundState.from_parts(config, **{**parts, "current": dealt.current})
    assert rebuilt.offers_declined == dealt.offers_declined == 1


def test_copy_plays_apart_and_shares_only_the_generator(states):
    state = states[("penalty", 2)][-1]
    before = snapshot(state)
    for share in (True, False):
        other = state.copy(share_rng=share)
        assert (other.rng is state.rng) == share
        playout(other, random.Random(0))
        assert other.is_over and snapshot(state) == before
    # An unshared copy draws the same reshuffles as a clone.
    a, b = state.copy(share_rng=False), state.clone()
    assert a.rng.integers(1 << 30) == b.rng.integers(1 << 30)


def _draw_state() -> RoundState:
    state = RoundState(make_config("classic"), list(range(52)), 0, np.random.default_rng(0))
    state.apply(state.legal_actions()[-1])  # both pass the upcard
    state.apply(state.legal_actions()[-1])
    state.apply(state.legal_actions()[0])  # must draw from the stock
    state.apply(state.legal_actions()[0])  # discard
    assert state.phase is Phase.DRAW
    return state


def _moved(parts: dict, seat_from: int, seat_to: int) -> dict:
    card = (parts["hands"][seat_from] & -parts["hands"][seat_from]).bit_length() - 1
    hands = list(parts["hands"])
    hands[seat_from] ^= 1 << card
    hands[seat_to] |= 1 << card
    return {**parts, "hands": hands}


BAD_PARTS = [
    ("a card twice", lambda p: {**p, "stock": p["stock"] + [p["discard_pile"][-1]]}, "exactly once.*repeated"),
    ("a card missing", lambda p: {**p, "stock": p["stock"][1:]}, "exactly once.*missing"),
    ("a hand too big", lambda p: _moved(p, 1, 0), r"hands\[0\] holds 11 cards; expected 10"),
    ("too few hands", lambda p: {**p, "hands": p["hands"][:1]}, "hands must hold 2"),
    ("a hand not a mask", lambda p: {**p, "hands": [p["hands"][0], "AS"]}, r"hands\[1\] must be a 52-bit card mask"),
    ("a float card", lambda p: {**p, "stock": [float(c) for c in p["stock"]]}, r"stock\[0\] must be a card id"),
    ("an unordered stock", lambda p: {**p, "stock": set(p["stock"])}, "stock must be a list"),
    ("the round over", lambda p: {**p, "phase": Phase.OVER}, "phase must be"),
    ("a phase name", lambda p: {**p, "phase": "DRAW"}, "phase must be"),
    ("a seat out of range", lambda p: {**p, "current": 2}, "current must be an int in 0..1"),
    ("a bool dealer", lambda p: {**p, "dealer": True}, "dealer must be an int"),
    ("an upcard off the deck", lambda p: {**p, "upcard": 52}, "upcard must be an int in 0..51"),
    ("a wrong knock limit", lambda p: {**p, "knock_limit": p["knock_limit"] + 1}, "knock_limit=.* does not match"),
    ("a taken card outside DISCARD", lambda p: {**p, "taken_card": p["discard_pile"][0]}, "taken_card is for phase DISCARD"),
    ("must draw out of turn", lambda p: {**p, "must_draw_stock": True}, "must_draw_stock is for the first draw"),
    ("must draw not a bool", lambda p: {**p, "must_draw_stock": 1}, "must_draw_stock must be True or False"),
    ("a known card not held", lambda p: {**p, "known": [0, 1 << p["stock"][0]]}, r"known\[1\] holds cards"),
    ("reshuffles in classic", lambda p: {**p, "reshuffles": 1}, "reshuffles must be an int in 0..0"),
    ("negative discards", lambda p: {**p, "discards": -1}, "discards must be"),
    ("an empty pile to draw from", lambda p: {**p, "discard_pile": [], "stock": p["stock"] + p["discard_pile"]}, "pile is empty"),
    ("a drawn-out stock", lambda p: {**p, "stock": p["stock"][:2], "discard_pile": p["stock"][2:] + p["discard_pile"]}, "stock holds 2"),
]


@pytest.mark.parametrize("change, message", [(c, m) for _, c, m in BAD_PARTS], ids=[name for name, _, _ in BAD_PARTS])
def test_from_parts_refuses_bad_parts(change, message):
    state = _draw_state()
    parts = change(parts_of(state))
    with pytest.raises(ValueError, match=message):
        RoundState.from_parts(state.config, **parts)


def test_from_parts_refuses_inconsistent_phases():
    config = make_config("classic")
    dealt = parts_of(RoundState(config, list(range(52)), 0))
    with pytest.raises(ValueError, match="offers_declined"):
        RoundState.from_parts(config, **{**dealt, "offers_declined": 1})
    with pytest.raises(ValueError, match="upcard only"):
        RoundState.from_parts(config, **{**dealt, "discard_pile": [dealt["stock"][0]], "stock": dealt["stock"][1:] + dealt["discard_pile"]})
    with pytest.raises(ValueError, match="config must be a RulesConfig"):
        RoundState.from_parts("classic", **dealt)
    discarding = {**dealt, "phase": Phase.DISCARD, "hands": [dealt["hands"][0], dealt["hands"][1] | 1 << dealt["stock"][-1]],
                  "stock": dealt["stock"][:-1], "current": 1}  # fmt: skip
    RoundState.from_parts(config, **discarding)  # drew from the stock: fine
    with pytest.raises(ValueError, match="taken_card .* is not in the hand"):
        RoundState.from_parts(config, **{**discarding, "taken_card": dealt["stock"][0]})
    # validate=False builds whatever it is given (the hot path of a sampler).
    assert RoundState.from_parts(config, **{**dealt, "offers_declined": 1}, validate=False).offers_declined == 1


# ----------------------------------------------------------------------------- information sets


def test_infoset_of_a_state_is_what_its_observation_shows(states):
    for table in states.values():
        for state in table[::3]:
            observation = {"observation": encode(state, [0] * state.num_players, 100, state.current), "action_mask": state.legal_mask()}
            assert InfoSet.from_view(view(observation), state.config) == InfoSet.of_state(state)


def test_the_true_hidden_cards_give_the_true_state_seen_from_the_seat(states):
    for (rules, n), table in states.items():
        for i, state in enumerate(table[::2]):
            seat = state.current
            info = InfoSet.of_state(state)
            opponents = [state.hands[(seat + k) % n] for k in range(1, n)]
            rebuilt = info.state(opponents, state.stock, random.Random(i))
            assert rebuilt.cards_accounted() == 52 and rebuilt.current == 0
            assert rebuilt.legal_actions() == state.legal_actions()
            assert (encode(rebuilt, [0] * n, 100, 0) == encode(state, [0] * n, 100, seat)).all()
            if rules == "classic":  # no reshuffles: the order below the pile's top never matters
                original = state.clone()
                playout(rebuilt, random.Random(i))
                playout(original, random.Random(i))
                assert rebuilt.outcome.rewards == [original.outcome.rewards[(seat + k) % n] for k in range(n)]


def test_a_sampled_state_shows_its_seat_the_same_information_set(states):
    for table in states.values():
        for i, state in enumerate(table[::4]):
            info = InfoSet.of_state(state)
            samples = [info.sample_state(random.Random(i * 10 + j)) for j in range(3)]
            for sample in samples:
                assert InfoSet.of_state(sample) == info and sample.cards_accounted() == 52
                RoundState.from_parts(sample.config, **parts_of(sample))  # passes every check
                playout(sample, random.Random(i))
                assert sample.is_over
    info = InfoSet.of_state(states[("classic", 2)][50])
    again = [info.sample_state(random.Random(7)) for _ in range(2)]
    assert again[0].hands == again[1].hands and again[0].stock == again[1].stock
    assert len({tuple(info.sample_state(random.Random(s)).stock) for s in range(5)}) > 1


def test_infoset_refuses_what_no_seat_can_see(states):
    state = next(s for s in states[("penalty", 3)] if InfoSet.of_state(s).opponent_known[0])
    info = InfoSet.of_state(state)
    n = state.num_players
    bad = [
        ({"stock_size": info.stock_size + 1}, "inconsistent"),
        ({"hand": info.hand | info.discard_pile}, "both in the hand and in the discard pile"),
        ({"knock_limit": info.knock_limit + 1}, "knock_limit"),
        ({"phase": Phase.OVER}, "phase must be"),
        ({"opponent_known": info.opponent_known[:1]}, "one mask per opponent"),
        ({"opponent_known": (info.hand & -info.hand,) + info.opponent_known[1:]}, "opponent 1 is shown holding a card"),
        ({"upcard": "AS"}, "upcard must be an int"),
        ({"seat_from_dealer": n}, "seat_from_dealer"),
    ]
    for change, message in bad:
        with pytest.raises(ValueError, match=message):
            dataclasses.replace(info, **change)
    hidden = [state.hands[(state.current + k) % n] for k in range(1, n)]
    with pytest.raises(ValueError, match="one mask per opponent"):
        info.state(hidden[:1], state.stock, random.Random(0))
    with pytest.raises(ValueError, match="guessed stock holds"):
        info.state(hidden, state.stock[1:], random.Random(0))
    with pytest.raises(ValueError, match="lacks cards"):
        info.state([hidden[0] & ~info.opponent_known[0], *hidden[1:]], state.stock, random.Random(0))
    over = state.clone()
    playout(over, random.Random(0))
    with pytest.raises(ValueError, match="over"):
        InfoSet.of_state(over)
