"""The network's per-decision inputs (okgin_env/features/network.py, built on the definitions of
okgin_env/features/facts.py; re-exported by training/features.py; training.policy.encode_decision).

``tests/test_golden.py`` pins the shipped policy's logits; these tests pin what the features
mean, that the one-pass path of training and play (``decision_features``) gives what the two
public functions give, and that a decision reads the view and runs the meld solver only once per
hand it asks about (the per-decision cost is paid at every step of training and labelling).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from gymnasium.utils import seeding

pytest.importorskip("torch")

import okgin_env.features.facts as features  # noqa: E402 - the card relations and the decision facts
from okgin_env.bots import make_bot  # noqa: E402
from okgin_env.match_loop import play_match  # noqa: E402
from okgin_env.observation import PackedEncoder, encode, view, view_of_state  # noqa: E402
from okgin_env.rules.actions import DISCARD_BASE, KNOCK_BASE, NUM_ACTIONS  # noqa: E402
from okgin_env.rules.cards import SUIT_MASK, card_id, parse_cards, to_mask  # noqa: E402
from okgin_env.rules.config import make_config  # noqa: E402
from okgin_env.rules.melds import deadwood_of_mask  # noqa: E402
from training.features import (  # noqa: E402
    MAX_LEGAL_ACTIONS,
    NUM_ACTION_FEATURES,
    NUM_CONTEXT_FEATURES,
    action_features,
    context_features,
    decision_features,
    decision_features_batch,
)
from training.policy import encode_batch, encode_decision, encode_states, encode_views  # noqa: E402

def mask_of(cards: str) -> int:
    return to_mask(parse_cards(cards))


TABLES = [("classic", 2), ("penalty", 2), ("penalty", 3), ("penalty", 4)]


def decisions(rules: str, num_players: int, count: int = 150) -> list[dict]:
    """Observation dicts of the seats to act in seeded simple-vs-simple matches."""
    config = make_config(rules, num_players=num_players)
    seen: list[dict] = []
    seed = 0
    while len(seen) < count:
        rng, _ = seeding.np_random(seed)
        bots = [make_bot("simple", seed=10 * seed + s) for s in range(num_players)]
        play_match(config, bots, rng, max_rounds=5, on_decision=lambda match, seat, obs: seen.append(obs) or len(seen) >= count)
        seed += 1
    return seen


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_encode_decision_is_the_public_features_padded(table):
    for observation in decisions(*table):
        flat, mask = observation["observation"], observation["action_mask"]
        context, rows, ids, legal, actions = encode_decision(flat, mask, table[1])
        v = view(observation)
        assert actions == [int(a) for a in np.flatnonzero(mask)] and all(type(a) is int for a in actions)
        assert context.dtype == rows.dtype == np.float32 and context.shape == (NUM_CONTEXT_FEATURES,)
        assert np.array_equal(context, context_features(v))
        assert rows.shape == (MAX_LEGAL_ACTIONS, NUM_ACTION_FEATURES)
        assert np.array_equal(rows[: len(actions)], action_features(v, actions)) and not rows[len(actions):].any()
        assert ids.tolist() == actions + [NUM_ACTIONS] * (MAX_LEGAL_ACTIONS - len(actions))
        assert legal.tolist() == [True] * len(actions) + [False] * (MAX_LEGAL_ACTIONS - len(actions))
        assert action_features(v, []).shape == (0, NUM_ACTION_FEATURES)


def test_discard_and_knock_rows_say_what_the_discard_leaves():
    for observation in decisions("penalty", 3, count=400):
        v = view(observation)
        for action, row in zip(v.legal, action_features(v, v.legal)):
            if action < DISCARD_BASE:
                continue
            knock = action >= KNOCK_BASE
            card = action - (KNOCK_BASE if knock else DISCARD_BASE)
            after = deadwood_of_mask(v.hand & ~(1 << card))
            assert row[3:5].tolist() == ([0.0, 1.0] if knock else [1.0, 0.0])
            assert row[5] == np.float32(after / 50.0) and row[13] == (after == 0)
            assert row[15] == (card == v.taken_card)
            if knock:
                assert after <= v.knock_limit and row[14] == np.float32((features._stored(v.knock_limit, 10.0) * 10 - after) / 10)


def test_features_read_the_knock_limit_as_the_observation_stores_it():
    """Kept on purpose: the shipped network was trained on the stored knock limit, float32(7 / 10)
    * 10 = 6.99999988..., so a discard leaving exactly 7 reads as just over the limit."""
    observation = decisions("classic", 2, count=1)[0]
    hand = mask_of("AS 2S 3S 4H 4D 4C 5C 6C 7C 7H KD")  # discarding KD leaves 7 deadwood
    v = dataclasses.replace(view(observation), hand=hand, knock_limit=7, taken_card=-1)
    king = card_id("KD")
    discard, knock = action_features(v, [DISCARD_BASE + king, KNOCK_BASE + king])
    assert discard[5] == knock[5] == np.float32(7 / 50)
    assert discard[7] == knock[7] == 0.0  # 7 <= 6.99999988 is false
    assert knock[14] == np.float32((float(np.float32(0.7)) * 10 - 7) / 10) < 0


def test_suit_neighbours_do_not_wrap_between_suits():
    king_of_spades, ace_of_hearts = card_id("KS"), card_id("AH")
    assert ace_of_hearts == king_of_spades + 1  # adjacent bits, different suits
    assert features._suit_neighbours(1 << king_of_spades, 1) == 1 << card_id("QS")
    assert features._suit_neighbours(1 << ace_of_hearts, 2) == 1 << card_id("3H")
    assert features._suit_neighbours(1 << card_id("KC"), 1) == 1 << card_id("QC")  # nothing past the last card
    rng = np.random.default_rng(0)
    for mask in rng.integers(0, 1 << 52, size=2000, dtype=np.int64).tolist():
        for distance in (1, 2):
            expected = 0
            for suit in range(4):  # the per-suit definition
                part = mask >> (13 * suit) & SUIT_MASK
                expected |= ((part << distance | part >> distance) & SUIT_MASK) << (13 * suit)
            assert features._suit_neighbours(mask, distance) == expected


def test_a_decision_runs_the_solver_once_per_hand(monkeypatch):
    """One read of the view per decision: the hand's deadwood once, every discard's in one pass
    over the hand when there are discards or knocks (a card's plain discard and its knock leave
    the same hand), one best-discard for the face-up card."""
    calls: list = []

    def counting(solver):
        def count(*masks):
            calls.append(masks)
            return solver(*masks)
        return count

    for name in ("deadwood_of_mask", "best_discard_deadwood_of_mask", "deadwood_after_discards"):
        monkeypatch.setattr(features, name, counting(getattr(features, name)))
    for observation in decisions("penalty", 2, count=200):
        v = view(observation)
        calls.clear()
        encode_decision(observation["observation"], observation["action_mask"], 2)
        discards = any(a >= DISCARD_BASE for a in v.legal)
        face_up = v.discard_top >= 0 and any(a < DISCARD_BASE and a != 0 for a in v.legal)
        expected = [(v.hand,)] + [(v.hand, v.hand)] * discards
        if face_up:
            expected.append((v.hand | 1 << v.discard_top,))
        assert sorted(calls) == sorted(expected)


def mixed_decisions(rules: str, num_players: int, count: int) -> list[dict]:
    """Seats to act in matches of random and simple players: takes, passes, knocks, long rounds."""
    config = make_config(rules, num_players=num_players)
    seen: list[dict] = []
    seed = 0
    while len(seen) < count:
        rng, _ = seeding.np_random(100 + seed)
        bots = [make_bot("random" if (seed + s) % 2 else "simple", seed=10 * seed + s) for s in range(num_players)]
        play_match(config, bots, rng, max_rounds=5, on_decision=lambda match, seat, obs: seen.append(obs) or len(seen) >= count)
        seed += 1
    return seen


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_the_batched_features_are_the_one_decision_features_bit_for_bit(table):
    """``decision_features_batch`` (labelling's rollouts, training's batches) equals the frozen
    one-decision path on every row, padding included, and ``encode_batch`` equals ``encode_decision``."""
    observations = mixed_decisions(*table, count=400)
    views = [view(o) for o in observations]
    actions = [v.legal for v in views]
    kinds = {a if a < DISCARD_BASE else (KNOCK_BASE if a >= KNOCK_BASE else DISCARD_BASE) for legal in actions for a in legal}
    assert kinds == {0, 1, 2, DISCARD_BASE, KNOCK_BASE}  # every kind of action row is compared
    contexts, rows = decision_features_batch(views, actions)
    for k, (v, legal) in enumerate(zip(views, actions)):
        context, expected = decision_features(v, legal)
        assert np.array_equal(contexts[k], context) and np.array_equal(rows[k], expected), k
    # Any lists of actions, not only the engine's legal sets: unordered, draws and discards mixed.
    odd = [list(reversed(legal)) + ([0] if legal[0] >= DISCARD_BASE else [DISCARD_BASE + (v.hand & -v.hand).bit_length() - 1])
           for v, legal in zip(views[:40], actions[:40])]
    odd_contexts, odd_rows = decision_features_batch(views[:40], odd)
    for k, (v, legal) in enumerate(zip(views[:40], odd)):
        context, expected = decision_features(v, legal)
        assert np.array_equal(odd_contexts[k], context) and np.array_equal(odd_rows[k], expected), (k, legal)
    width = max(len(a) for a in actions)
    assert np.array_equal(decision_features_batch(views, actions, width)[1], rows[:, :width])
    with pytest.raises(ValueError, match="do not fit"):
        decision_features_batch(views, actions, width - 1)
    tensors, batch_actions = encode_batch(np.stack([o["observation"] for o in observations]),
                                          np.stack([o["action_mask"] for o in observations]), table[1])
    assert batch_actions == actions
    for k, o in enumerate(observations):
        one = encode_decision(o["observation"], o["action_mask"], table[1])
        assert np.array_equal(tensors[0][k].numpy(), o["observation"])
        for tensor, part in zip(tensors[1:], one[:4]):
            assert np.array_equal(tensor[k].numpy(), part), k


def mixed_states(rules: str, num_players: int, count: int) -> list:
    """``(round state copy, match scores)`` at every decision of matches of random and simple
    players, the rounds' last (over) states included."""
    config = make_config(rules, num_players=num_players)
    seen: list = []
    seed = 0

    def record(match, *_):
        seen.append((match.round.copy(share_rng=False), list(match.scores)))
        return len(seen) >= count

    while len(seen) < count:
        rng, _ = seeding.np_random(300 + seed)
        bots = [make_bot("random" if (seed + s) % 2 else "simple", seed=10 * seed + s) for s in range(num_players)]
        play_match(config, bots, rng, max_rounds=5, on_decision=record, on_round=lambda match, outcome: record(match))
        seed += 1
    return seen


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_features_read_from_states_are_those_of_their_views(table):
    """``facts_of_state`` (every seat, rounds over included) equals the facts of ``view_of_state``,
    and ``encode_states`` (labelling's rollouts) equals stacking ``encode`` and ``encode_views`` of
    the views, array for array, with and without the outlook columns; it refuses a seat not to act."""
    rules, n = table
    config = make_config(rules, num_players=n)
    states = mixed_states(rules, n, count=700 if n > 2 else 300)
    # The sample reaches what the facts and the observation read: finished rounds, a card just
    # taken, match scores that differ by seat (their rotation), and at 3-4 players stock reshuffles
    # (with 10 cards each the rounds of these players end before the stock runs out).
    assert any(st.is_over for st, _ in states)
    assert any(st.taken_card >= 0 and not st.is_over for st, _ in states)
    assert any(len(set(scores)) > 1 for _, scores in states)
    if n > 2:
        assert any(st.reshuffles > 0 for st, _ in states)
    for st, scores in states:
        for seat in range(n):
            expected = features._training_facts(view_of_state(st, scores, config.target_score, seat))
            got = features.facts_of_state(st, seat)
            assert all(getattr(got, name) == getattr(expected, name) for name in features._Facts.__slots__
                       if name not in ("_after", "_discards_known"))
    encoder = PackedEncoder(n, config.target_score)
    acting = [(st, scores) for st, scores in states if not st.is_over]
    for seat in range(n):
        group = [(st, scores) for st, scores in acting if st.current == seat]
        for outlook in (False, True):
            tensors, actions = encode_states(encoder, [st for st, _ in group], [sc for _, sc in group], seat, outlook)
            views = [view_of_state(st, sc, config.target_score, seat) for st, sc in group]
            width = max(len(v.legal) for v in views)
            expected, expected_actions = encode_views(views, n, width, outlook)
            assert actions == expected_actions
            assert np.array_equal(tensors[0].numpy(), np.stack([encode(st, sc, config.target_score, seat) for st, sc in group]))
            for got, want in zip(tensors[1:], expected):
                assert np.array_equal(got.numpy(), want.numpy())
    # Without a seat, each state is read for its own seat to act (the rollouts mix seats in one pass).
    assert len({st.current for st, _ in acting}) == n
    for outlook in (False, True):
        tensors, actions = encode_states(encoder, [st for st, _ in acting], [sc for _, sc in acting], outlook=outlook)
        views = [view_of_state(st, sc, config.target_score, st.current) for st, sc in acting]
        expected, expected_actions = encode_views(views, n, max(len(v.legal) for v in views), outlook)
        assert actions == expected_actions
        assert np.array_equal(tensors[0].numpy(),
                              np.stack([encode(st, sc, config.target_score, st.current) for st, sc in acting]))
        for got, want in zip(tensors[1:], expected):
            assert np.array_equal(got.numpy(), want.numpy())
    other = [(st, scores) for st, scores in acting if st.current != 0][:5]
    with pytest.raises(ValueError, match="not to act"):
        encode_states(encoder, [st for st, _ in other], [sc for _, sc in other], 0)
    over = next(st for st, _ in states if st.is_over)
    with pytest.raises(ValueError, match="rounds in play"):
        encode_states(encoder, [over], [[0] * n], over.current)
    with pytest.raises(ValueError, match="at least one"):
        encode_states(encoder, [], [], 0)
