"""Showdown and scoring on literal hands (docs/rules.md §6, §9, §10): knock, gin, undercut, layoffs,
the knocker's blocking layout, penalty scoring with 3 and 4 players, spade_double.

Most tests call ``knock_outcome`` directly on the hands shown after the knock (the knocker's hand
without the knock card); a few play the round through to show the same from the table.
"""

from __future__ import annotations

import pytest

from okgin_env import Phase, make_config
from okgin_env.rules.actions import DRAW_STOCK, PASS
from okgin_env.rules.showdown import knock_outcome

from tests.helpers import card_id, ids, knock, layoffs_fit, mask, new_round


def showdown(hands, knocker=0, limit=10, upcard="TH", rules="classic", **options):
    """Score a knock by ``knocker`` on the hands shown (strings per seat)."""
    cfg = make_config(rules, num_players=len(hands), **options)
    # The knock card only travels into the outcome; any card nobody holds will do.
    held = {c for h in hands for c in ids(h)} | {card_id(upcard)}
    knock_card = next(c for c in range(52) if c not in held)
    out = knock_outcome(cfg, [mask(h) for h in hands], knocker, limit, card_id(upcard), knock_card)
    assert abs(sum(out.rewards)) < 1e-9
    assert out.knock_card == knock_card
    return out


def cards(text):
    return sorted(ids(text))


def melds_of(text_melds):
    return sorted(sorted(ids(m)) for m in text_melds)


# ----------------------------------------------------------------------------- classic: knock, undercut, gin

KNOCKER_K5 = "2S 3S 4S 7D 8D 9D JC QC KC 5D"  # three runs, 5D loose: K = 5
DEFENDER_MELDS = "5C 6C 7C 8C 2H 3H 4H 5H"  # eight melded cards, nothing that lays off


@pytest.mark.parametrize(
    "loose, d, kind, points",
    [
        pytest.param("AD 2C", 3, "undercut", [0, 10 + 2], id="undercut"),
        pytest.param("AD 4D", 5, "undercut", [0, 10 + 0], id="tie-is-undercut"),
        pytest.param("AD 8S", 9, "knock", [9 - 5, 0], id="knock"),
    ],
)
def test_classic_knock_and_undercut(loose, d, kind, points):
    out = showdown([KNOCKER_K5, DEFENDER_MELDS + " " + loose])
    assert out.deadwood == [5, d]
    assert out.kind == kind
    winner = 1 if kind == "undercut" else 0
    assert out.winner == winner and out.knocker == 0
    assert out.points == points
    assert out.rewards == [float(points[0] - points[1]), float(points[1] - points[0])]
    assert out.layoffs == [[], []]
    assert out.melds[0] == melds_of(["2S 3S 4S", "7D 8D 9D", "JC QC KC"])


def test_classic_undercut_bonus_option():
    out = showdown([KNOCKER_K5, DEFENDER_MELDS + " AD 2C"], undercut_bonus=20)
    assert out.kind == "undercut" and out.points == [0, 22]


@pytest.mark.parametrize(
    "loose, d, kind, points",
    [
        pytest.param("AD 2C", 3, "undercut", [5 - 3 + 25, 0], id="undercut-strictly-less"),
        pytest.param("AD 4D", 5, "knock", [0, 0], id="tie-is-not-an-undercut"),
        pytest.param("AD 8S", 9, "knock", [0, 9 - 5], id="knock"),
    ],
)
def test_penalty_two_players_knock_and_undercut(loose, d, kind, points):
    out = showdown([KNOCKER_K5, DEFENDER_MELDS + " " + loose], rules="penalty")
    assert out.deadwood == [5, d]
    assert (out.kind, out.winner) == (kind, 1 if kind == "undercut" else 0)
    assert out.points == points


GIN_KNOCKER = "2S 3S 4S 5S 7D 8D 9D JC QC KC"
# 6S, TD/6D and TC would all lay off on a knock; on a gin they stay deadwood: 6+10+6+10+1+7+9 = 49.
GIN_DEFENDER = "6S TD 6D TC 2C 3C 4C AH 7H 9H"


@pytest.mark.parametrize("gin_bonus", [25, 20])
def test_classic_gin_gets_the_bonus_and_no_layoffs(gin_bonus):
    out = showdown([GIN_KNOCKER, GIN_DEFENDER], gin_bonus=gin_bonus)
    assert (out.kind, out.winner) == ("gin", 0)
    assert out.deadwood == [0, 49]
    assert out.layoffs == [[], []]
    assert out.points == [gin_bonus + 49, 0]
    assert out.melds[1] == melds_of(["2C 3C 4C"])


def test_classic_gin_defender_with_zero_deadwood_scores_nothing():
    out = showdown([GIN_KNOCKER, "AH 2H 3H 4H 6C 7C 8C TH JH QH"])
    assert out.deadwood == [0, 0] and out.kind == "gin" and out.points == [25, 0]


def test_gin_from_the_stock_on_the_first_turn():
    # Seat 1 holds 2S 3S 4S 7D 8D 9D JC QC KC 5H, both decline 8C, seat 1 draws 5S and goes gin.
    state = new_round([GIN_DEFENDER, "2S 3S 4S 7D 8D 9D JC QC KC 5H"], upcard="8C", stock="5S", dealer=0)
    state.apply(PASS)
    state.apply(PASS)
    state.apply(DRAW_STOCK)
    assert knock("5H") in state.legal_actions()
    state.apply(knock("5H"))
    out = state.outcome
    assert state.phase is Phase.OVER
    assert (out.kind, out.knocker, out.winner) == ("gin", 1, 1)
    assert out.deadwood == [49, 0] and out.layoffs == [[], []]
    assert out.points == [0, 25 + 49] and out.rewards == [-74.0, 74.0]


# ----------------------------------------------------------------------------- classic: layoffs

RUN_KNOCKER = "5H 6H 7H 2S 3S 4S JC QC KC AD"  # K = 1


@pytest.mark.parametrize(
    "defender, laid, d",
    [
        # 4H then 3H chain down from 5H; 8H goes on the top end. KD stays: 10.
        pytest.param("3H 4H 8H 9C 9D 9S 5D 6D 7D KD", "3H 4H 8H", 10, id="chain-both-ends"),
        # Without 4H the 3H cannot reach the run: only 8H goes. 3H + KD + QD = 23.
        pytest.param("3H 8H 9C 9D 9S 5D 6D 7D KD QD", "8H", 23, id="no-gap-jumping"),
        # 8H then 9H lay off one after another on the top end: 8H 9H KD AC = 28 -> 11.
        pytest.param("8H 9H JS QS KS 5D 6D 7D KD AC", "8H 9H", 11, id="chain-up"),
    ],
)
def test_classic_layoffs_chain_on_a_run(defender, laid, d):
    out = showdown([RUN_KNOCKER, defender])
    assert out.layoffs == [[], cards(laid)]
    assert out.deadwood == [1, d]
    assert (out.kind, out.points) == ("knock", [d - 1, 0])
    assert layoffs_fit(out.melds[0], out.layoffs[1])


def test_classic_fourth_card_on_a_set():
    # The knocker lays 7S 7H 7D; the defender's 7C goes on as the fourth card.
    out = showdown(["7S 7H 7D 2C 3C 4C JD QD KD AH", "7C 9S TS JS 4H 5H 6H 2D 3S 8C"])
    assert out.melds[0] == melds_of(["7S 7H 7D", "2C 3C 4C", "JD QD KD"])
    assert out.layoffs == [[], ids("7C")]
    assert out.deadwood == [1, 2 + 3 + 8]
    assert out.points == [12, 0]


# The example of docs/rules.md §6: the knocker does better by laying 2S 2C 2D + 5C 6C 7C (K = 8) than
# the three runs (K = 2), because the runs let the defender lay off 4D 5D.
EXAMPLE_KNOCKER = "AS 2S 3S 2C 5C 6C 7C AD 2D 3D"
EXAMPLE_DEFENDER = "JS QS KS 4D 5D 8D 2H 3H 4H 5H"


@pytest.mark.parametrize("limit", [10, 8])
def test_knocker_lays_out_to_block_layoffs_rules_example(limit):
    out = showdown([EXAMPLE_KNOCKER, EXAMPLE_DEFENDER], limit=limit)
    assert out.melds[0] == melds_of(["2S 2C 2D", "5C 6C 7C"])
    assert out.deadwood == [8, 17]
    assert out.layoffs == [[], []]
    assert (out.kind, out.winner, out.points) == ("knock", 0, [9, 0])
    assert out.melds[1] == melds_of(["JS QS KS", "2H 3H 4H 5H"])


def test_blocking_layout_must_stay_within_the_knock_limit():
    # With a limit of 7 the K = 8 layout is not allowed: runs, the defender lays off 4D 5D, +6.
    out = showdown([EXAMPLE_KNOCKER, EXAMPLE_DEFENDER], limit=7)
    assert out.melds[0] == melds_of(["AS 2S 3S", "5C 6C 7C", "AD 2D 3D"])
    assert out.layoffs == [[], cards("4D 5D")]
    assert out.deadwood == [2, 8]
    assert out.points == [6, 0]


def test_knocker_layout_from_the_table():
    # The same hands in play: seat 1 holds the knocker's cards and KD, draws, and knocks throwing KD.
    state = new_round([EXAMPLE_DEFENDER, "AS 2S 3S 2C 5C 6C 7C AD 2D KD"], upcard="TH", stock="3D", dealer=0)
    state.apply(PASS)
    state.apply(PASS)
    state.apply(DRAW_STOCK)
    state.apply(knock("KD"))
    out = state.outcome
    assert out.melds[1] == melds_of(["2S 2C 2D", "5C 6C 7C"])
    assert out.deadwood == [17, 8] and out.points == [0, 9]


# ----------------------------------------------------------------------------- penalty, 3 and 4 players

P_KNOCKER = "2S 3S 4S 7D 8D 9D 3C"  # K = 3
P_SEAT2 = "8H 8C 8S 9C TC JC 5H"  # D = 5


@pytest.mark.parametrize(
    "seat1, d1, kind, winner, points",
    [
        # Seat 1 D = 10, seat 2 D = 5: each is charged their deadwood minus the knocker's 3.
        pytest.param("JH QH KH 5C 6C 7C TS", 10, "knock", 0, [0, 7, 2], id="knock"),
        # Seat 1 D = 3 = K: not an undercut (strictly less is needed), charged 0.
        pytest.param("JH QH KH 5C 6C 7C 3H", 3, "knock", 0, [0, 0, 2], id="tie-with-knocker"),
        # Seat 1 D = 2 < 3 undercuts: the knocker pays 3 - 2 + 25, seat 2 pays 5 - 2.
        pytest.param("JH QH KH 5C 6C 7C 2H", 2, "undercut", 1, [26, 0, 3], id="undercut"),
    ],
)
def test_penalty_three_players_knock_and_undercut(seat1, d1, kind, winner, points):
    out = showdown([P_KNOCKER, seat1, P_SEAT2], rules="penalty")
    assert out.deadwood == [3, d1, 5]
    assert (out.kind, out.knocker, out.winner) == (kind, 0, winner)
    assert out.points == points
    mean_others = [(sum(points) - p) / 2 for p in points]
    assert out.rewards == [m - p for m, p in zip(mean_others, points)]


def test_penalty_three_players_gin():
    # 5S and JD would lay off on a knock; not on a gin.
    out = showdown(["2S 3S 4S 7D 8D 9D TD", "5S JD 2C 3C 4C 6H 6C", "AS 6D KH KC KS 8H 9H"], rules="penalty")
    assert (out.kind, out.winner) == ("gin", 0)
    assert out.deadwood == [0, 27, 24]
    assert out.layoffs == [[], [], []]
    assert out.points == [0, 27 + 25, 24 + 25]
    assert out.rewards == [50.5, -27.5, -23.0]


@pytest.mark.parametrize(
    "seat0, winner, points",
    [
        # Seats 3 and 0 both undercut with 1: the first in turn order after the knocker (seat 2) is
        # seat 3, not the lower seat number. Knocker 3 - 1 + 25, seat 0 1 - 1, seat 1 6 - 1.
        pytest.param("8H 8C 8S 9C TC JC AD", 3, [0, 5, 27, 0], id="tie-goes-to-turn-order"),
        # Seat 0 with 0 is strictly lower and undercuts: knocker 3 + 25, seat 1 6, seat 3 1.
        pytest.param("8H 8C 8S 9C TC JC QC", 0, [0, 6, 28, 1], id="least-deadwood-wins"),
    ],
)
def test_penalty_four_players_undercut_between_undercutters(seat0, winner, points):
    hands = [seat0, "4H 5H 6H KS KD KC 6S", "2S 3S 4S 7D 8D 9D 3C", "JH QH KH 5C 6C 7C AH"]
    out = showdown(hands, knocker=2, rules="penalty")
    assert out.deadwood[1:] == [6, 3, 1]
    assert (out.kind, out.knocker, out.winner) == ("undercut", 2, winner)
    assert out.points == points


@pytest.mark.parametrize(
    "knocker_hand, kind, points",
    [
        # Seat 0 D = 10, seat 1 D = 6, seat 3 D = 9, knocker 3: each pays D - 3.
        pytest.param("2S 3S 4S 7D 8D 9D 3C", "knock", [7, 3, 0, 6], id="knock"),
        # Gin: each pays D + 25.
        pytest.param("2S 3S 4S 7D 8D 9D TD", "gin", [35, 31, 0, 34], id="gin"),
    ],
)
def test_penalty_four_players_knock_and_gin(knocker_hand, kind, points):
    hands = ["8H 8C 8S 9C TC JC TH", "4H 5H 6H KS KD KC 6S", knocker_hand, "JH QH KH 5C 6C 7C 9S"]
    out = showdown(hands, knocker=2, rules="penalty")
    assert (out.kind, out.knocker, out.winner) == (kind, 2, 2)
    assert out.points == points
    assert abs(sum(out.rewards)) < 1e-9 and out.rewards[2] == sum(points) / 3


# ----------------------------------------------------------------------------- penalty: layoff order

# The knocker (seat 0) lays 7H 8H 9H and 2S 3S 4S; 4D is loose: K = 4.
LAYOFF_KNOCKER = "7H 8H 9H 2S 3S 4S 4D"
HOLDS_6H = "6H KC 5C 6C 7C JD QD"  # lays 6H: 36 -> 30
HOLDS_5H_TH = "5H TH 9C 9D 9S AD 2C"  # 5H TH AD 2C = 18; TH can go on the top end (-> 8)
HOLDS_TH = "TH KC 5C 6C 7C JD QD"  # lays TH: 40 -> 30
HOLDS_JH_6H = "JH 6H 9C 9D 9S AD 2C"  # JH 6H AD 2C = 19


@pytest.mark.parametrize(
    "seat1, seat2, layoffs, deadwood, kind, points",
    [
        # docs/rules.md §9: seat 1 adds 6H to 7H 8H 9H; seat 2 may not add 5H through it (that would
        # make seat 2's deadwood 3 < 4, an undercut). Seat 2 still adds TH at the other end.
        pytest.param(HOLDS_6H, HOLDS_5H_TH, [[], ["6H"], ["TH"]], [4, 30, 8], "knock", [0, 26, 4], id="rules-example"),
        # The other order: seat 1 closes the top end with TH, seat 2 adds 6H at the bottom; 5H never fits.
        pytest.param(HOLDS_5H_TH, HOLDS_6H, [[], ["TH"], ["6H"]], [4, 8, 30], "knock", [0, 4, 26], id="reversed"),
        # Seat 1 adds TH: seat 2 may not add JH through it, but adds 6H at the bottom: 19 - 6 = 13.
        pytest.param(HOLDS_TH, HOLDS_JH_6H, [[], ["TH"], ["6H"]], [4, 30, 13], "knock", [0, 26, 9], id="top-end"),
    ],
)
def test_penalty_layoffs_in_turn_order_may_not_pass_through_another_players_card(
    seat1, seat2, layoffs, deadwood, kind, points
):
    out = showdown([LAYOFF_KNOCKER, seat1, seat2], rules="penalty")
    assert out.melds[0] == melds_of(["7H 8H 9H", "2S 3S 4S"])
    assert out.layoffs == [cards(" ".join(laid)) for laid in layoffs]
    assert out.deadwood == deadwood
    assert (out.kind, out.winner, out.points) == (kind, 0, points)


def test_penalty_layoff_order_starts_after_the_knocker():
    # The same hands with the knocker at seat 1: seat 2 (HOLDS_6H) lays off first, then seat 0.
    out = showdown([HOLDS_5H_TH, LAYOFF_KNOCKER, HOLDS_6H], knocker=1, rules="penalty")
    assert out.layoffs == [ids("TH"), [], ids("6H")]
    assert out.deadwood == [8, 4, 30] and out.points == [4, 0, 26]


def test_penalty_one_player_may_chain_their_own_layoffs():
    # A single player may lay 6H and then 5H: only another player's card blocks.
    out = showdown([LAYOFF_KNOCKER, "6H 5H 9C 9D 9S AD 2C", "TS JS QS KC QC JC 8C"], rules="penalty")
    assert out.layoffs[1] == cards("5H 6H")
    assert out.deadwood[1] == 3 and out.kind == "undercut" and out.winner == 1


# ----------------------------------------------------------------------------- spade_double


@pytest.mark.parametrize(
    "upcard, double, factor",
    [("TS", True, 2), ("TH", True, 1), ("TS", False, 1), ("AS", True, 2)],
)
def test_spade_double_classic(upcard, double, factor):
    knock_out = showdown([KNOCKER_K5, DEFENDER_MELDS + " AD 8S"], upcard=upcard, spade_double=double)
    assert knock_out.points == [4 * factor, 0] and knock_out.rewards == [4.0 * factor, -4.0 * factor]
    under = showdown([KNOCKER_K5, DEFENDER_MELDS + " AD 2C"], upcard=upcard, spade_double=double)
    assert under.points == [0, 12 * factor]
    gin = showdown([GIN_KNOCKER, GIN_DEFENDER], upcard=upcard, spade_double=double)
    assert gin.points == [74 * factor, 0]


@pytest.mark.parametrize("upcard, double, factor", [("9S", True, 2), ("9D", True, 1), ("9S", False, 1)])
def test_spade_double_penalty(upcard, double, factor):
    out = showdown(
        [P_KNOCKER, "JH QH KH 5C 6C 7C 2H", P_SEAT2], rules="penalty", upcard=upcard, spade_double=double
    )
    assert out.kind == "undercut" and out.points == [26 * factor, 0, 3 * factor]


def test_spade_double_from_the_table():
    # The first-turn knock story of test_rules_round with a spade upcard: 38 points become 76.
    state = new_round(
        ["5C 6C 7C KS KH KD 9S TS QH JH", "2S 3S 4S 7D 8D 9D AC 2C 3H 4H"],
        upcard="5S",
        stock="5H",
        dealer=0,
        spade_double=True,
    )
    state.apply(PASS)
    state.apply(PASS)
    state.apply(DRAW_STOCK)
    state.apply(knock("2C"))
    assert state.outcome.deadwood == [39, 1]
    assert state.outcome.points == [0, 76] and state.outcome.rewards == [-76.0, 76.0]


# ----------------------------------------------------------------------------- the showdown memo


def test_a_remembered_showdown_is_scored_afresh():
    """A knock's scoring is remembered (rollouts end in the same positions again and again): the
    same knock again gives an equal outcome, a new object the caller may change without changing
    any later one, the spade double applies after the memo, and an emptied memo changes nothing."""
    from okgin_env.rules import showdown as module
    from okgin_env.rules.memo import clear_memos

    hands = [LAYOFF_KNOCKER, HOLDS_6H, HOLDS_5H_TH]
    clear_memos()
    assert not module._KNOCK_SCORING
    first = showdown(hands, rules="penalty")
    assert len(module._KNOCK_SCORING) == 1
    expected = first.to_dict()
    first.points[1] += 100
    first.deadwood[0] = -1
    first.melds[0].clear()
    first.layoffs[1].append(0)
    again = showdown(hands, rules="penalty")
    assert again is not first and again.to_dict() == expected
    assert len(module._KNOCK_SCORING) == 1  # the second came from the memo
    doubled = showdown(hands, rules="penalty", upcard="9S", spade_double=True)
    assert doubled.points == [2 * p for p in expected["points"]]
    clear_memos()
    assert not module._KNOCK_SCORING
    assert showdown(hands, rules="penalty").to_dict() == expected
