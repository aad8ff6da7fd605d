"""Invariants over many random and greedy rounds and matches, for both presets and 2-4 players.

After every action all 52 cards are accounted for; every legal action applies (tried on clones);
every round ends; each outcome is checked against the rules from its own numbers: the knocker's
layout is made of real melds within the knock limit, layoffs fit the knocker's melds, the points
follow from the deadwood (docs/rules.md §6, §9), the rewards sum to zero, and in a match the scores are
the sums of the round points and the right seat deals.

The default suite plays a few thousand rounds; ``-m slow`` adds a 100,000-round run.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from okgin_env import MatchState, Phase, RoundState, make_config
from okgin_env.rules.cards import mask_value, to_mask
from okgin_env.rules.melds import deadwood_of_mask

from tests.helpers import greedy_action, is_meld, layoffs_fit, random_action, snapshot

SETUPS = [("classic", 2), ("penalty", 2), ("penalty", 3), ("penalty", 4)]


def make_policy(kind, rng):
    """``"random"``, ``"greedy"`` or ``"mixed"`` (each seat picks one per round)."""
    if kind == "random":
        return lambda state: random_action(state, rng)
    if kind == "greedy":
        return greedy_action
    return None


def play_round(state: RoundState, rng: np.random.Generator, policy: str, alternatives: float = 0.1) -> None:
    """Play to the end, checking the card count after every action and trying legal alternatives."""
    n = state.num_players
    seats = [policy] * n if policy != "mixed" else [("random", "greedy")[int(b)] for b in rng.integers(2, size=n)]
    policies = [make_policy(kind, rng) for kind in seats]
    bound = 2 * state.config.max_turns + n + 2
    steps = 0
    while not state.is_over:
        legal = state.legal_actions()
        assert legal, "a round in progress always has a legal action"
        assert np.flatnonzero(state.legal_mask()).tolist() == legal
        if rng.random() < alternatives:
            before = snapshot(state)
            for action in rng.choice(legal, size=min(3, len(legal)), replace=False):
                other = state.clone()
                other.apply(int(action))
                assert other.cards_accounted() == 52
            assert snapshot(state) == before, "playing on a clone changed the original"
        state.apply(policies[state.current](state))
        assert state.cards_accounted() == 52
        assert state.pile_mask == sum(1 << card for card in state.discard_pile), "pile_mask out of step"
        steps += 1
        assert steps <= bound, "the round did not end"
    assert state.legal_actions() == [] and state.phase is Phase.OVER
    check_outcome(state)


def check_outcome(state: RoundState) -> None:
    cfg, out, n = state.config, state.outcome, state.num_players
    assert out is not None
    assert abs(sum(out.rewards)) < 1e-9, out.rewards
    assert out.hands == [state.hand(s) for s in range(n)]
    if out.kind == "draw":
        assert out.knocker is None and out.winner is None
        assert out.points == [0] * n and out.rewards == [0.0] * n
        assert state.discards >= cfg.max_turns or len(state.stock) == 2
        return
    k = out.knocker
    hand = [to_mask(h) for h in out.hands]
    assert out.knock_card is not None and not any(h >> out.knock_card & 1 for h in hand)
    assert hand[k].bit_count() == cfg.hand_size
    # The knocker's layout: real, disjoint melds from the hand, deadwood within the limit.
    melded = 0
    for meld in out.melds[k]:
        assert is_meld(meld), meld
        assert not to_mask(meld) & melded and to_mask(meld) & ~hand[k] == 0
        melded |= to_mask(meld)
    assert out.deadwood[k] == mask_value(hand[k] & ~melded)
    assert deadwood_of_mask(hand[k]) <= out.deadwood[k] <= state.knock_limit
    gin = deadwood_of_mask(hand[k]) == 0
    assert (out.kind == "gin") == gin
    laid_all = []
    for seat in range(n):
        if seat == k:
            assert out.layoffs[seat] == []
            continue
        laid = to_mask(out.layoffs[seat])
        assert laid & ~hand[seat] == 0
        if gin:
            assert laid == 0
        rest = hand[seat] & ~laid
        own = 0
        for meld in out.melds[seat]:
            assert is_meld(meld) and not to_mask(meld) & own and to_mask(meld) & ~rest == 0
            own |= to_mask(meld)
        assert out.deadwood[seat] == mask_value(rest & ~own) == deadwood_of_mask(rest)
        assert out.deadwood[seat] <= deadwood_of_mask(hand[seat])
        laid_all.extend(out.layoffs[seat])
    assert layoffs_fit(out.melds[k], laid_all)
    expected_kind, expected_winner, expected = expected_score(state)
    assert (out.kind, out.winner) == (expected_kind, expected_winner)
    assert out.points == expected
    if not cfg.penalty_scoring:
        # Only the winner scores; it can score 0 only when a bonus is 0 (an undercut at equal
        # deadwood with undercut_bonus=0, or gin against no deadwood with gin_bonus=0).
        assert all(p == 0 for seat, p in enumerate(out.points) if seat != out.winner)
        zero_allowed = (out.kind == "undercut" and cfg.undercut_bonus == 0) or (out.kind == "gin" and cfg.gin_bonus == 0)
        assert out.points[out.winner] > 0 or (out.points[out.winner] == 0 and zero_allowed)
    else:
        assert min(out.points) >= 0 and out.points[out.winner] == 0


def expected_score(state: RoundState):
    """(kind, winner, points) from the reported deadwood, by docs/rules.md §6 / §9."""
    cfg, out, n = state.config, state.outcome, state.num_players
    k, dw = out.knocker, out.deadwood
    factor = 2 if cfg.spade_double and state.upcard < 13 else 1
    points = [0] * n
    order = [(k + i) % n for i in range(1, n)]
    if not cfg.penalty_scoring:
        d = order[0]
        if dw[k] == 0:
            points[k] = cfg.gin_bonus + dw[d]
            kind, winner = "gin", k
        elif dw[d] <= dw[k]:
            points[d] = cfg.undercut_bonus + dw[k] - dw[d]
            kind, winner = "undercut", d
        else:
            points[k] = dw[d] - dw[k]
            kind, winner = "knock", k
    elif dw[k] == 0:
        kind, winner = "gin", k
        for s in order:
            points[s] = dw[s] + cfg.gin_bonus
    else:
        under = [s for s in order if dw[s] < dw[k]]
        if under:
            low = min(dw[s] for s in under)
            winner = next(s for s in under if dw[s] == low)
            kind = "undercut"
            for s in range(n):
                if s != winner:
                    points[s] = dw[s] - low
            points[k] += cfg.undercut_bonus
        else:
            kind, winner = "knock", k
            for s in order:
                points[s] = dw[s] - dw[k]
    return kind, winner, [factor * p for p in points]


def random_rounds(rules, num_players, policy, count, seed, alternatives=0.05, **options):
    cfg = make_config(rules, num_players=num_players, **options)
    rng = np.random.default_rng(seed)
    kinds: dict[str, int] = {}
    for _ in range(count):
        state = RoundState(cfg, rng.permutation(52).tolist(), int(rng.integers(num_players)), rng)
        play_round(state, rng, policy, alternatives)
        kinds[state.outcome.kind] = kinds.get(state.outcome.kind, 0) + 1
    return kinds


@pytest.mark.parametrize("rules, num_players", SETUPS)
@pytest.mark.parametrize("policy, count", [("random", 100), ("greedy", 300), ("mixed", 200)])
def test_round_invariants(rules, num_players, policy, count):
    seed = zlib.crc32(f"{rules}-{num_players}-{policy}".encode())  # str hash() varies between runs
    kinds = random_rounds(rules, num_players, policy, count, seed)
    assert sum(kinds.values()) == count
    if policy == "greedy":  # greedy players knock: the showdown paths are exercised
        assert kinds.get("knock", 0) + kinds.get("gin", 0) > 0 and kinds.get("draw", 0) < count


@pytest.mark.parametrize("rules, num_players", SETUPS)
def test_round_invariants_with_house_options(rules, num_players):
    random_rounds(
        rules,
        num_players,
        "mixed",
        120,
        seed=num_players,
        spade_double=True,
        allow_discard_taken=True,
        ace_upcard_gin_only=False,
        gin_bonus=20,
        undercut_bonus=15,
    )


@settings(max_examples=150, deadline=None)
@given(
    setup=st.sampled_from(SETUPS),
    seed=st.integers(0, 2**32 - 1),
    policy=st.sampled_from(["random", "greedy", "mixed"]),
    spade_double=st.booleans(),
    allow_discard_taken=st.booleans(),
    ace_upcard_gin_only=st.booleans(),
    max_turns=st.integers(1, 80),
    max_reshuffles=st.integers(0, 3),
    gin_bonus=st.integers(0, 50),
    undercut_bonus=st.integers(0, 50),
)
def test_round_invariants_under_any_options(setup, seed, policy, **options):
    rules, num_players = setup
    random_rounds(rules, num_players, policy, 1, seed, alternatives=0.3, **options)


def play_match(cfg, rng, policy):
    match = MatchState(cfg, rng)
    totals = [0] * cfg.num_players
    while True:
        dealer = match.dealer
        state = match.round
        assert state.dealer == dealer and state.current == (dealer + 1) % cfg.num_players
        seats = [policy] * cfg.num_players
        policies = [make_policy(kind, rng) for kind in seats]
        outcome = None
        while outcome is None:
            outcome = match.apply(policies[state.current](state))
            assert state.cards_accounted() == 52
        check_outcome(state)
        totals = [t + p for t, p in zip(totals, outcome.points)]
        assert match.scores == totals
        assert match.dealer == (dealer if outcome.winner is None else outcome.winner)
        if match.is_over:
            break
        assert max(totals) < cfg.target_score
        match.deal_next_round()
    assert max(totals) >= cfg.target_score
    if cfg.penalty_scoring:
        assert totals[match.winner] == min(totals)
    else:
        assert totals[match.winner] >= cfg.target_score
    return match


@pytest.mark.parametrize("rules, num_players", SETUPS)
def test_match_invariants(rules, num_players):
    rng = np.random.default_rng(num_players + 10 * (rules == "penalty"))
    for target in (100, 40):
        cfg = make_config(rules, num_players=num_players, target_score=target, max_turns=200)
        for _ in range(8):
            play_match(cfg, rng, "greedy")


def test_clones_are_independent():
    cfg = make_config("penalty", num_players=3)
    rng = np.random.default_rng(5)
    state = RoundState(cfg, rng.permutation(52).tolist(), 0, rng)
    for _ in range(30):
        state.apply(greedy_action(state))
    copy = state.clone()
    before = snapshot(state)
    while not copy.is_over:
        copy.apply(random_action(copy, rng))
    assert snapshot(state) == before
    # The clone carries its own generator: two clones reshuffle identically.
    a, b = state.clone(), state.clone()
    while not a.is_over:
        action = greedy_action(a)
        a.apply(action)
        b.apply(action)
        assert a.stock == b.stock


@pytest.mark.slow
def test_many_rounds():
    """100,800 rounds, random, greedy and mixed, every setup (run with ``pytest -m slow``; ~4 CPU minutes)."""
    total = 0
    for index, (rules, num_players) in enumerate(SETUPS):
        for policy in ("random", "greedy", "mixed"):
            kinds = random_rounds(rules, num_players, policy, 8_400, seed=1000 + index, alternatives=0.02)
            total += sum(kinds.values())
    assert total >= 100_000
