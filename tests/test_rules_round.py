"""Scripted rounds: knock limits, the upcard offer, the taken-card rule, drawn rounds, reshuffles.

Every test deals a known deck (tests/helpers.py ``new_round``) and walks the round step by step,
checking the legal actions, the phase and the outcome where the rules (docs/rules.md) say something.
"""

from __future__ import annotations

import numpy as np
import pytest

from okgin_env import Phase, card_str
from okgin_env.rules.actions import DRAW_STOCK, PASS, TAKE_DISCARD

from tests.helpers import card_id, discard, discards_in, ids, knock, knocks_in, new_round, snapshot


def pass_all(state) -> None:
    """Everybody declines the upcard, in turn order."""
    for _ in range(state.num_players):
        assert state.phase is Phase.OFFER
        assert state.legal_actions() == [TAKE_DISCARD, PASS]
        state.apply(PASS)


def draw_and_throw(state) -> int:
    """One turn: draw the stock top and discard that same card. Returns the card."""
    assert state.phase is Phase.DRAW
    card = state.stock[-1]
    state.apply(DRAW_STOCK)
    state.apply(discard(card))
    assert state.cards_accounted() == 52
    return card


# ----------------------------------------------------------------------------- knock limit

RUNS_8 = "2S 3S 4S 5S 6H 7H 8H 9H"  # two four-card runs; the other three cards decide the knock
ACE_HAND = "2S 3S 4S 7D 8D 9D JC QC KC AD"  # nine melded cards and the Ace of diamonds


@pytest.mark.parametrize(
    "upcard, options, limit, hand, drawn, at_limit, above_limit",
    [
        # Ace upcard: gin only. Drawing 5S makes 2S-5S, so discarding AD is gin; 2S would leave AD (1).
        pytest.param("AH", {}, 0, ACE_HAND, "5S", "AD", "2S", id="ace-gin-only-gin"),
        # Ace upcard, drawing 2C: the best left is AD alone (1), above 0: no knock at all.
        pytest.param("AH", {}, 0, ACE_HAND, "2C", None, "2C", id="ace-gin-only-deadwood-1"),
        # ace_upcard_gin_only=False: an Ace allows 1; throwing 2C keeps AD (1), throwing AD keeps 2C (2).
        pytest.param("AH", {"ace_upcard_gin_only": False}, 1, ACE_HAND, "2C", "2C", "AD", id="ace-allows-1"),
        # Six upcard: 6D+AC+5C loose. Throw 6D -> 6 (at the limit); throw 5C -> 7 (above).
        pytest.param("6C", {}, 6, RUNS_8 + " 6D AC", "5C", "6D", "5C", id="six"),
        # Ten and face upcards: TD+AC+9C loose. Throw TD -> 10 (at the limit); throw 9C -> 11 (above).
        pytest.param("TC", {}, 10, RUNS_8 + " TD AC", "9C", "TD", "9C", id="ten"),
        pytest.param("JD", {}, 10, RUNS_8 + " TD AC", "9C", "TD", "9C", id="jack"),
        pytest.param("QS", {}, 10, RUNS_8 + " TD AC", "9C", "TD", "9C", id="queen"),
        pytest.param("KH", {}, 10, RUNS_8 + " TD AC", "9C", "TD", "9C", id="king"),
    ],
)
def test_knock_limit_from_the_upcard(upcard, options, limit, hand, drawn, at_limit, above_limit):
    # Dealer 0; seat 1 (the non-dealer) holds the hand, both decline the upcard, seat 1 draws.
    state = new_round([None, hand], upcard, stock=drawn, dealer=0, **options)
    assert state.knock_limit == limit
    pass_all(state)
    assert state.current == 1 and state.legal_actions() == [DRAW_STOCK]
    state.apply(DRAW_STOCK)
    assert state.phase is Phase.DISCARD
    legal = state.legal_actions()
    # Every card may be thrown normally (it came from the stock).
    assert discards_in(legal) == set(state.hand(1))
    expected_knocks = {card_id(at_limit)} if at_limit else set()
    assert knocks_in(legal) == expected_knocks
    assert knock(above_limit) not in legal
    before = snapshot(state)
    with pytest.raises(ValueError, match="not legal"):
        state.apply(knock(above_limit))
    assert snapshot(state) == before
    if at_limit:
        state.apply(knock(at_limit))
        outcome = state.outcome
        assert state.phase is Phase.OVER and state.legal_actions() == []
        assert outcome.knocker == 1 and outcome.knock_card == card_id(at_limit)
        assert outcome.deadwood[1] == limit
        assert outcome.kind == "gin" if limit == 0 else outcome.kind in ("knock", "undercut")
        assert state.cards_accounted() == 52


@pytest.mark.parametrize("rules", ["classic", "penalty"])
@pytest.mark.parametrize("gin_only", [True, False])
def test_knock_limit_is_the_upcard_value_for_every_card(rules, gin_only):
    expected = {"A": 0 if gin_only else 1, "T": 10, "J": 10, "Q": 10, "K": 10}
    expected.update({str(v): v for v in range(2, 10)})
    for upcard in range(52):
        state = new_round([None, None], upcard, rules=rules, ace_upcard_gin_only=gin_only)
        assert state.upcard == upcard and state.discard_pile == [upcard]
        assert state.knock_limit == expected[card_str(upcard)[0]], card_str(upcard)


# ----------------------------------------------------------------------------- the upcard offer (classic)

NON_DEALER = "AS 2S 3S 4S 5S 6S 7S 8S 9S TS"  # seat 1's hand in the offer stories (dealer 0)


def test_offer_non_dealer_takes_the_upcard():
    state = new_round([None, NON_DEALER], upcard="7C", stock="KD", dealer=0)
    assert (state.phase, state.current) == (Phase.OFFER, 1)
    assert state.legal_actions() == [TAKE_DISCARD, PASS]
    assert state.discard_pile == ids("7C") and state.stock[-1] == card_id("KD")
    state.apply(TAKE_DISCARD)
    assert (state.phase, state.current) == (Phase.DISCARD, 1)
    assert card_id("7C") in state.hand(1) and state.discard_pile == []
    assert discards_in(state.legal_actions()) == set(ids(NON_DEALER))  # not the upcard just taken
    state.apply(discard("TS"))
    # Then the dealer takes a normal turn: stock or the card just thrown.
    assert (state.phase, state.current) == (Phase.DRAW, 0)
    assert state.legal_actions() == [DRAW_STOCK, TAKE_DISCARD]
    assert state.discard_top == card_id("TS")
    state.apply(DRAW_STOCK)
    assert card_id("KD") in state.hand(0)


def test_history_holds_each_move_as_a_seat_action_pair():
    state = new_round([None, NON_DEALER], upcard="7C", stock="KD", dealer=0)
    state.apply(PASS)
    state.apply_unchecked(np.int64(TAKE_DISCARD))  # an id of another int type is kept as given
    thrown = min(discards_in(state.legal_actions()))
    state.apply(discard(thrown))
    assert state.history == [(1, PASS), (0, TAKE_DISCARD), (0, discard(thrown))]
    assert [type(action) for _, action in state.history] == [int, np.int64, int]
    copy = state.copy()
    copy.apply(DRAW_STOCK)
    assert len(state.history) == 3 and copy.history[-1] == (1, DRAW_STOCK)


def test_offer_non_dealer_passes_and_dealer_takes():
    state = new_round([None, NON_DEALER], upcard="7C", stock="KD", dealer=0)
    state.apply(PASS)
    assert (state.phase, state.current) == (Phase.OFFER, 0)
    assert state.legal_actions() == [TAKE_DISCARD, PASS]
    state.apply(TAKE_DISCARD)
    assert (state.phase, state.current) == (Phase.DISCARD, 0)
    assert card_id("7C") in state.hand(0)
    thrown = state.hand(0)[0]
    state.apply(discard(thrown))
    # The non-dealer now plays a normal turn: they may take the dealer's discard.
    assert (state.phase, state.current) == (Phase.DRAW, 1)
    assert state.legal_actions() == [DRAW_STOCK, TAKE_DISCARD]
    state.apply(TAKE_DISCARD)
    assert (state.phase, state.current) == (Phase.DISCARD, 1)
    assert discard(thrown) not in state.legal_actions()
    state.apply(discard("AS"))
    assert (state.phase, state.current) == (Phase.DRAW, 0)


def test_offer_both_pass_then_non_dealer_must_draw():
    state = new_round([None, NON_DEALER], upcard="7C", stock="KD", dealer=0)
    state.apply(PASS)
    state.apply(PASS)
    assert (state.phase, state.current) == (Phase.DRAW, 1)
    assert state.legal_actions() == [DRAW_STOCK]  # the upcard may not be taken now
    before = snapshot(state)
    with pytest.raises(ValueError, match="not legal"):
        state.apply(TAKE_DISCARD)
    assert snapshot(state) == before
    state.apply(DRAW_STOCK)
    assert card_id("KD") in state.hand(1) and state.discard_pile == ids("7C")
    state.apply(discard("KD"))
    assert (state.phase, state.current) == (Phase.DRAW, 0)
    assert state.legal_actions() == [DRAW_STOCK, TAKE_DISCARD]


OFFER_CASES = [
    pytest.param(n, dealer, taker, id=f"{n}p-dealer{dealer}-" + ("all-pass" if taker is None else f"taker{taker}"))
    for n in (3, 4)
    for dealer in (1, n - 1)
    for taker in [*range(n), None]  # position in the offer order (0 = the dealer's left)
]


@pytest.mark.parametrize("num_players, dealer, taker", OFFER_CASES)
def test_penalty_offer_goes_around_in_turn_order(num_players, dealer, taker):
    state = new_round([None] * num_players, upcard="7C", stock="KD", dealer=dealer, rules="penalty")
    order = [(dealer + 1 + k) % num_players for k in range(num_players)]
    for position, seat in enumerate(order):
        if position == taker:
            break
        assert (state.phase, state.current) == (Phase.OFFER, seat)
        assert state.legal_actions() == [TAKE_DISCARD, PASS]
        state.apply(PASS)
    if taker is None:
        # Everybody declined: the player after the dealer begins from the stock.
        assert (state.phase, state.current) == (Phase.DRAW, order[0])
        assert state.legal_actions() == [DRAW_STOCK]
        state.apply(DRAW_STOCK)
        assert card_id("KD") in state.hand(order[0])
        state.apply(discard("KD"))
        assert (state.phase, state.current) == (Phase.DRAW, order[1])
        return
    seat = order[taker]
    assert (state.phase, state.current) == (Phase.OFFER, seat)
    state.apply(TAKE_DISCARD)
    assert (state.phase, state.current) == (Phase.DISCARD, seat)
    assert discard("7C") not in state.legal_actions()
    state.apply(discard(state.hand(seat)[0]))
    # Play continues to the taker's left with a normal turn.
    assert (state.phase, state.current) == (Phase.DRAW, (seat + 1) % num_players)
    assert state.legal_actions() == [DRAW_STOCK, TAKE_DISCARD]
    assert state.cards_accounted() == 52


def test_penalty_hands_are_dealt_one_at_a_time_from_the_dealers_left():
    hands = ["AS 2S 3S 4S 5S 6S 7S", "AH 2H 3H 4H 5H 6H 7H", "AD 2D 3D 4D 5D 6D 7D", "AC 2C 3C 4C 5C 6C 7C"]
    state = new_round(hands, upcard="KC", stock="QC JC", dealer=2, rules="penalty")
    for seat, hand in enumerate(hands):
        assert state.hand(seat) == sorted(ids(hand))
    assert state.discard_pile == ids("KC") and state.stock[-2:] == ids("JC QC")
    assert len(state.stock) == 52 - 4 * 7 - 1 and state.current == 3


# ----------------------------------------------------------------------------- knocking on the first turn

KNOCKER = "2S 3S 4S 7D 8D 9D AC 2C 3H 4H"  # with 5H: three runs and AC 2C loose
DEFENDER = "5C 6C 7C KS KH KD 9S TS QH JH"  # 5C-7C, three kings; 9S TS QH JH loose = 39, no layoffs


@pytest.mark.parametrize("knocker_deals", [False, True])
def test_knock_on_the_first_turn_with_the_upcard(knocker_deals):
    # Seat 1 holds KNOCKER; the upcard 5H (knock limit 5) completes 3H 4H 5H.
    dealer = 1 if knocker_deals else 0
    state = new_round([DEFENDER, KNOCKER], upcard="5H", dealer=dealer)
    assert state.knock_limit == 5
    if knocker_deals:
        assert state.current == 0
        state.apply(PASS)
    assert (state.phase, state.current) == (Phase.OFFER, 1)
    state.apply(TAKE_DISCARD)
    legal = state.legal_actions()
    # Throwing AC leaves 2 and throwing 2C leaves 1; anything else leaves more than 5; 5H was just taken.
    assert knocks_in(legal) == set(ids("AC 2C"))
    assert discard("5H") not in legal and knock("5H") not in legal
    state.apply(knock("2C"))
    out = state.outcome
    assert (out.kind, out.knocker, out.winner, out.knock_card) == ("knock", 1, 1, card_id("2C"))
    assert out.deadwood == [39, 1]
    assert sorted(out.melds[1]) == sorted(sorted(ids(m)) for m in ["2S 3S 4S", "7D 8D 9D", "3H 4H 5H"])
    assert out.layoffs == [[], []]
    assert out.points == [0, 38] and out.rewards == [-38.0, 38.0]
    assert state.cards_accounted() == 52


def test_knock_on_the_first_turn_after_drawing_from_the_stock():
    # Both decline the 5D upcard; seat 1 draws 5H and knocks at once.
    state = new_round([DEFENDER, KNOCKER], upcard="5D", stock="5H", dealer=0)
    pass_all(state)
    state.apply(DRAW_STOCK)
    assert knocks_in(state.legal_actions()) == set(ids("AC 2C"))
    state.apply(knock("AC"))
    out = state.outcome
    assert (out.kind, out.winner, out.deadwood, out.points) == ("knock", 1, [39, 2], [0, 37])


# ----------------------------------------------------------------------------- the card taken from the pile

TAKER = "2S 3S 4S 7D 8D 9D JH QH KH AD"  # nine melded + AD; the upcard TC sets the limit to 10


@pytest.mark.parametrize("allow", [False, True])
def test_card_taken_from_the_pile_cannot_be_thrown_back(allow):
    state = new_round([None, TAKER], upcard="TC", dealer=0, allow_discard_taken=allow)
    state.apply(TAKE_DISCARD)
    legal = state.legal_actions()
    assert (discard("TC") in legal) == allow
    # Knocking: throwing AD keeps TC (10, at the limit); throwing TC keeps AD (1) but only if allowed.
    assert knocks_in(legal) == (set(ids("AD TC")) if allow else set(ids("AD")))
    if not allow:
        for action in (discard("TC"), knock("TC")):
            before = snapshot(state)
            with pytest.raises(ValueError, match="not legal"):
                state.apply(action)
            assert snapshot(state) == before
        return
    state.apply(knock("TC"))
    assert state.outcome.deadwood[1] == 1 and state.outcome.knock_card == card_id("TC")


def test_taken_card_rule_lasts_one_turn_only():
    state = new_round([None, TAKER], upcard="TC", stock="KC QC", dealer=0)
    pass_all(state)
    state.apply(DRAW_STOCK)  # seat 1 draws KC
    state.apply(discard("AD"))
    state.apply(TAKE_DISCARD)  # seat 0 takes AD from the pile
    assert discard("AD") not in state.legal_actions()
    thrown = next(c for c in state.hand(0) if c != card_id("AD"))
    state.apply(discard(thrown))
    state.apply(DRAW_STOCK)  # seat 1 draws QC
    state.apply(discard("QC"))
    state.apply(DRAW_STOCK)  # seat 0's next turn: AD may go now
    assert discard("AD") in state.legal_actions()
    state.apply(discard("AD"))
    assert state.discard_top == card_id("AD")


# ----------------------------------------------------------------------------- drawn rounds

GIN_READY = "2S 3S 4S 7D 8D 9D TC JC QC KC"  # ten melded cards: seat 1 could go gin at any time


def test_classic_round_is_drawn_at_two_stock_cards():
    state = new_round([None, GIN_READY], upcard="5H", dealer=0)
    pass_all(state)
    assert len(state.stock) == 31
    for _ in range(28):  # 28 turns of draw-and-throw leave three stock cards
        draw_and_throw(state)
    assert len(state.stock) == 3 and (state.phase, state.current) == (Phase.DRAW, 1)
    state.apply(DRAW_STOCK)
    assert len(state.stock) == 2
    drawn = state.hand(1)
    drawn = next(c for c in drawn if c not in ids(GIN_READY))
    # Knocking is still possible on the turn that brings the stock to two ...
    assert knock(drawn) in state.legal_actions()
    knocked = state.clone()
    knocked.apply(knock(drawn))
    assert knocked.outcome.kind == "gin" and knocked.outcome.winner == 1
    # ... but a normal discard ends the round as a draw: nobody scores.
    state.apply(discard(drawn))
    out = state.outcome
    assert state.phase is Phase.OVER and state.legal_actions() == []
    assert (out.kind, out.knocker, out.winner) == ("draw", None, None)
    assert out.points == [0, 0] and out.rewards == [0.0, 0.0]
    assert len(state.stock) == 2 and state.cards_accounted() == 52
    with pytest.raises(ValueError, match="over"):
        state.apply(DRAW_STOCK)


@pytest.mark.parametrize("rules, num_players", [("classic", 2), ("penalty", 3), ("penalty", 4)])
def test_round_is_drawn_at_max_turns(rules, num_players):
    state = new_round([None] * num_players, upcard="5H", dealer=0, rules=rules, max_turns=5)
    pass_all(state)
    for _ in range(4):
        draw_and_throw(state)
    assert state.phase is Phase.DRAW
    draw_and_throw(state)
    out = state.outcome
    assert state.phase is Phase.OVER and out.kind == "draw" and out.winner is None
    assert out.points == [0] * num_players and out.rewards == [0.0] * num_players
    assert state.discards == 5 and len(state.stock) > 2


# ----------------------------------------------------------------------------- penalty: reshuffles


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_penalty_reshuffles_the_pile_under_the_last_two_stock_cards(num_players):
    state = new_round([None] * num_players, upcard="5H", dealer=0, rules="penalty", seed=7, max_reshuffles=1)
    pass_all(state)
    turns = len(state.stock) - 2  # draw-and-throw turns until two stock cards are left
    for _ in range(turns - 1):
        draw_and_throw(state)
    # The last turn before the wall: the player draws, leaving two cards, and throws the drawn card.
    last = state.stock[-1]
    state.apply(DRAW_STOCK)
    last_two = list(state.stock)
    assert len(last_two) == 2
    pile_before = list(state.discard_pile)  # the upcard and every card thrown so far
    seat = state.current
    state.apply(discard(last))
    # The round goes on: the pile but its top (the card just thrown) is shuffled under the two cards.
    assert state.outcome is None and state.reshuffles == 1
    assert (state.phase, state.current) == (Phase.DRAW, (seat + 1) % num_players)
    assert state.legal_actions() == [DRAW_STOCK, TAKE_DISCARD]
    assert state.discard_pile == [last]
    assert state.stock[-2:] == last_two  # still on top, drawn next
    assert sorted(state.stock[:-2]) == sorted(pile_before)
    assert len(state.stock) == 2 + turns
    assert state.cards_accounted() == 52
    # With max_reshuffles=1 the next time the stock is down to two the round is drawn.
    for _ in range(turns - 1):
        draw_and_throw(state)
        assert state.outcome is None
    draw_and_throw(state)
    assert state.outcome is not None and state.outcome.kind == "draw"
    assert state.outcome.points == [0] * num_players and state.reshuffles == 1


@pytest.mark.parametrize("max_reshuffles", [0, 1, 3])
@pytest.mark.parametrize("num_players", [2, 4])
def test_penalty_round_is_drawn_after_max_reshuffles(num_players, max_reshuffles):
    state = new_round(
        [None] * num_players, upcard="5H", dealer=0, rules="penalty", seed=3, max_reshuffles=max_reshuffles
    )
    pass_all(state)
    turns = len(state.stock) - 2  # each reshuffle brings the stock back to the same size
    for reshuffle in range(max_reshuffles + 1):
        for _ in range(turns):
            assert state.outcome is None and state.reshuffles == reshuffle
            draw_and_throw(state)
    assert state.outcome is not None and state.outcome.kind == "draw"
    assert state.reshuffles == max_reshuffles and len(state.stock) == 2
    assert state.discards == (max_reshuffles + 1) * turns
