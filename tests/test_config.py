"""Bad input is refused with a ValueError that says what was wrong and what is allowed, and a
refused action leaves the state exactly as it was."""

from __future__ import annotations

import numpy as np
import pytest

from okgin_env import MatchState, Phase, RoundState, card_str, make_config
from okgin_env.rules.actions import DRAW_STOCK, NUM_ACTIONS, PASS, TAKE_DISCARD
from okgin_env.rules.config import OPTION_NAMES, RulesConfig

from tests.helpers import build_deck, discard, ids, knock, new_round, snapshot


# ----------------------------------------------------------------------------- presets and options


def test_presets():
    classic = make_config("classic")
    assert (classic.num_players, classic.hand_size, classic.gin_bonus, classic.undercut_bonus) == (2, 10, 25, 10)
    assert classic.target_score == 100 and classic.ace_upcard_gin_only and not classic.allow_discard_taken
    assert classic.tie_is_undercut and not classic.penalty_scoring and not classic.reshuffle_stock
    assert not classic.spade_double
    penalty = make_config("penalty", num_players=3)
    assert penalty.hand_size == 7 and penalty.undercut_bonus == 25 and penalty.gin_bonus == 25
    assert penalty.penalty_scoring and penalty.reshuffle_stock and not penalty.tie_is_undercut
    assert make_config("penalty", num_players=2).hand_size == 10
    assert make_config("penalty", num_players=4).hand_size == 7


def test_options_are_applied_and_frozen():
    cfg = make_config("classic", gin_bonus=20, target_score=50, spade_double=True, max_turns=9)
    assert (cfg.gin_bonus, cfg.target_score, cfg.spade_double, cfg.max_turns) == (20, 50, True, 9)
    with pytest.raises(AttributeError):
        cfg.gin_bonus = 30  # type: ignore[misc]
    assert make_config(cfg) is cfg
    derived = make_config(cfg, undercut_bonus=15)
    assert derived.undercut_bonus == 15 and derived.gin_bonus == 20 and derived.rules == "classic"


def test_unknown_option():
    with pytest.raises(ValueError, match=r"unknown rule option.*'gin_bonnus'.*allowed:.*gin_bonus"):
        make_config("classic", gin_bonnus=20)


def test_unknown_preset():
    with pytest.raises(ValueError, match=r"unknown rules preset 'oklahoma'.*allowed: classic, standard, penalty"):
        make_config("oklahoma")


BAD_OPTIONS = [
    ("classic", {"num_players": 3}, r"num_players=3 is not allowed with rules='classic'; allowed: \[2\]"),
    ("classic", {"num_players": 1}, r"num_players=1 .*allowed: \[2\]"),
    ("penalty", {"num_players": 5}, r"num_players=5 .*allowed: \[2, 3, 4\]"),
    ("penalty", {"num_players": 1}, r"num_players=1 .*allowed: \[2, 3, 4\]"),
    ("penalty", {"num_players": 3.0}, r"num_players=3.0 .*allowed: \[2, 3, 4\]"),
    ("penalty", {"num_players": "3"}, r"num_players='3' .*allowed"),
    ("classic", {"gin_bonus": "25"}, r"gin_bonus='25' is not allowed; expected an int in 0\.\.1000"),
    ("classic", {"gin_bonus": -1}, r"gin_bonus=-1 is not allowed; expected an int in 0\.\.1000"),
    ("classic", {"gin_bonus": 2.5}, r"gin_bonus=2.5 .*expected an int"),
    ("classic", {"gin_bonus": True}, r"gin_bonus=True .*expected an int"),
    ("classic", {"undercut_bonus": None}, r"undercut_bonus=None .*expected an int"),
    ("classic", {"target_score": 0}, r"target_score=0 .*expected an int in 1\.\.100000"),
    ("penalty", {"max_turns": 0}, r"max_turns=0 .*expected an int in 1\.\."),
    ("penalty", {"max_reshuffles": -1}, r"max_reshuffles=-1 .*expected an int in 0\.\."),
    ("classic", {"ace_upcard_gin_only": 1}, r"ace_upcard_gin_only=1 is not allowed; expected True or False"),
    ("classic", {"allow_discard_taken": "no"}, r"allow_discard_taken='no' .*expected True or False"),
    ("penalty", {"spade_double": None}, r"spade_double=None .*expected True or False"),
]


@pytest.mark.parametrize("rules, options, message", BAD_OPTIONS, ids=[str(o) for _, o, _ in BAD_OPTIONS])
def test_bad_option_values(rules, options, message):
    with pytest.raises(ValueError, match=message):
        make_config(rules, **options)


def test_deriving_from_a_config_is_validated_too():
    cfg = make_config("penalty", num_players=3)
    with pytest.raises(ValueError, match=r"num_players=7 .*allowed: \[2, 3, 4\]"):
        make_config(cfg, num_players=7)
    with pytest.raises(ValueError, match=r"gin_bonus='x'"):
        make_config(cfg, gin_bonus="x")
    with pytest.raises(ValueError, match="unknown rule option"):
        make_config(cfg, colour="red")


def test_every_option_has_a_name_in_the_config():
    assert set(OPTION_NAMES) == set(RulesConfig.__dataclass_fields__)


# ----------------------------------------------------------------------------- decks and dealers

CLASSIC = make_config("classic")
GOOD_DECK = list(range(52))


@pytest.mark.parametrize(
    "deck, message",
    [
        pytest.param(GOOD_DECK[:51], r"permutation of the 52 cards; got 51 cards, missing \['KC'\]", id="51-cards"),
        pytest.param(GOOD_DECK + [0], r"permutation of the 52 cards; got 53 cards", id="53-cards"),
        pytest.param([0] + GOOD_DECK[1:51] + [0], r"got 52 cards, missing \['KC'\]", id="duplicate"),
        pytest.param(["AS"] * 52, r"permutation of the 52 cards", id="all-the-same"),
        pytest.param(["1X"] + GOOD_DECK[1:], r"cannot parse card '1X'.*rank in A23456789TJQK", id="bad-text"),
        pytest.param([52] + GOOD_DECK[1:], r"card id must be in 0\.\.51, got 52", id="id-52"),
        pytest.param([-1] + GOOD_DECK[1:], r"card id must be in 0\.\.51, got -1", id="id-negative"),
        pytest.param([0.0] + GOOD_DECK[1:], r"a card is an id 0\.\.51 or a text", id="float"),
        pytest.param(None, r"deck must be a sequence of 52 card ids or texts, got NoneType", id="none"),
        pytest.param(7, r"deck must be a sequence", id="int"),
    ],
)
def test_bad_decks(deck, message):
    with pytest.raises(ValueError, match=message):
        RoundState(CLASSIC, deck, 0)
    if deck is not None:  # a match without a deck shuffles one
        with pytest.raises(ValueError, match=message):
            MatchState(CLASSIC, np.random.default_rng(0), deck=deck, dealer=0)


def test_decks_may_be_texts_or_numpy_ids():
    deck = build_deck(["AS 2S 3S 4S 5S 6S 7S 8S 9S TS", "AH 2H 3H 4H 5H 6H 7H 8H 9H TH"], upcard="KC")
    # Lower case and "10" for ten are accepted in card texts.
    texts = [card_str(c).lower().replace("t", "10") for c in deck]
    a = RoundState(CLASSIC, texts, 0)
    b = RoundState(CLASSIC, np.array(deck), np.int64(0))
    assert a.hands == b.hands and a.stock == b.stock and a.upcard == b.upcard == ids("KC")[0]
    assert a.hand(0) == ids("AS 2S 3S 4S 5S 6S 7S 8S 9S TS")


@pytest.mark.parametrize(
    "rules, num_players, dealer",
    [
        ("classic", 2, 2),
        ("classic", 2, -1),
        ("penalty", 3, 3),
        ("penalty", 4, 4),
        ("classic", 2, "0"),
        ("classic", 2, 1.0),
        ("classic", 2, True),
    ],
)
def test_dealer_out_of_range(rules, num_players, dealer):
    cfg = make_config(rules, num_players=num_players)
    message = rf"dealer must be a seat in 0\.\.{num_players - 1}, got {dealer!r}"
    with pytest.raises(ValueError, match=message):
        RoundState(cfg, GOOD_DECK, dealer)
    with pytest.raises(ValueError, match=message):
        MatchState(cfg, np.random.default_rng(0), dealer=dealer)


# ----------------------------------------------------------------------------- illegal actions

HAND_1 = "AS 2S 3S 4S 5S 6S 7S 8S 9S TS"


def offer_state():
    return new_round([None, HAND_1], upcard="KH", stock="QH", dealer=0)


def draw_state():
    state = offer_state()
    state.apply(PASS)
    state.apply(PASS)
    state.apply(DRAW_STOCK)
    state.apply(discard("QH"))
    return state  # seat 0 to draw, discard top QH


def discard_state():
    state = offer_state()
    state.apply(TAKE_DISCARD)
    return state  # seat 1 holds KH just taken


ILLEGAL = [
    # wrong phase
    pytest.param(
        offer_state,
        DRAW_STOCK,
        r"action 0 \(draw stock\) is not legal for player 1 in phase OFFER; legal: 1 \(take discard\), 2 \(pass\)",
        id="draw-during-offer",
    ),
    pytest.param(offer_state, discard("AS"), r"not legal .*phase OFFER", id="discard-during-offer"),
    pytest.param(
        draw_state,
        PASS,
        r"action 2 \(pass\) is not legal for player 0 in phase DRAW; legal: 0 \(draw stock\), 1 \(take discard\)",
        id="pass-during-draw",
    ),
    pytest.param(draw_state, discard("KC"), r"not legal .*phase DRAW", id="discard-during-draw"),
    pytest.param(
        discard_state,
        DRAW_STOCK,
        r"not legal for player 1 in phase DISCARD; legal: .*discard AS",
        id="draw-during-discard",
    ),
    # card not in hand, the card just taken, a knock above the limit
    pytest.param(
        discard_state,
        discard("QD"),
        rf"action {discard('QD')} \(discard QD\) is not legal .*legal: .*discard AS",
        id="card-not-in-hand",
    ),
    pytest.param(discard_state, knock("QD"), r"\(knock QD\) is not legal", id="knock-card-not-in-hand"),
    pytest.param(discard_state, discard("KH"), r"\(discard KH\) is not legal", id="taken-card"),
    # throwing 2S leaves AS loose beside 3S..TS: AS + KH = 11 > 10
    pytest.param(discard_state, knock("2S"), r"\(knock 2S\) is not legal", id="knock-above-limit"),
    # out of range and not an int
    pytest.param(offer_state, NUM_ACTIONS, r"must be an int in 0\.\.106, got 107; legal now: \[1, 2\]", id="107"),
    pytest.param(offer_state, -1, r"action must be an int in 0\.\.106, got -1", id="negative"),
    pytest.param(offer_state, "1", r"action must be an int in 0\.\.106, got '1'", id="string"),
    pytest.param(offer_state, 1.0, r"action must be an int in 0\.\.106, got 1\.0", id="float"),
    pytest.param(offer_state, True, r"action must be an int in 0\.\.106, got True", id="bool"),
    pytest.param(offer_state, None, r"action must be an int in 0\.\.106, got None", id="none"),
    pytest.param(offer_state, [1], r"action must be an int", id="list"),
]


@pytest.mark.parametrize("make_state, action, message", ILLEGAL)
def test_illegal_actions_are_refused_and_change_nothing(make_state, action, message):
    state = make_state()
    before = snapshot(state)
    hands = state.hands
    with pytest.raises(ValueError, match=message):
        state.apply(action)
    assert snapshot(state) == before and state.hands is hands


def test_numpy_actions_are_accepted():
    state = offer_state()
    state.apply(np.int64(PASS))
    state.apply(np.int32(PASS))
    assert state.phase is Phase.DRAW and state.history == [(1, 2), (0, 2)]
    assert all(type(a) is int for _, a in state.history)


def test_no_action_after_the_round_is_over():
    state = new_round([None, "2S 3S 4S 7D 8D 9D JC QC KC TC"], upcard="KH", stock="5H", dealer=0)
    state.apply(PASS)
    state.apply(PASS)
    state.apply(DRAW_STOCK)
    state.apply(knock("5H"))
    before = snapshot(state)
    for action in (DRAW_STOCK, knock("5H"), 200):
        with pytest.raises(ValueError, match="the round is over; no action is legal"):
            state.apply(action)
    assert snapshot(state) == before


def test_match_refuses_illegal_actions_without_changes():
    match = MatchState(CLASSIC, np.random.default_rng(0), deck=build_deck([None, HAND_1], "KH"), dealer=0)
    before = snapshot(match.round)
    with pytest.raises(ValueError, match="not legal"):
        match.apply(DRAW_STOCK)
    assert snapshot(match.round) == before and match.scores == [0, 0] and match.rounds_played == 0


# ----------------------------------------------------------------------------- RulesConfig built directly


@pytest.mark.parametrize(
    "values, message",
    [
        ({"rules": "bogus"}, "unknown rules preset"),
        ({"num_players": 7, "target_score": -5}, "num_players=7"),
        ({"target_score": 0}, "target_score=0"),
        ({"rules": "penalty", "num_players": 5}, "num_players=5"),
        ({"spade_double": 1}, "spade_double=1"),
    ],
)
def test_rules_config_built_directly_is_validated(values, message):
    with pytest.raises(ValueError, match=message):
        RulesConfig(**values)


def test_make_config_keeps_a_given_configs_player_count():
    three = make_config("penalty", num_players=3)
    assert make_config(three) is three
    assert make_config(three, num_players=None).num_players == 3
    assert make_config(three, num_players=4).num_players == 4


def test_numpy_integer_options_are_ints():
    config = make_config("penalty", num_players=np.int64(3), target_score=np.int32(50))
    assert (config.num_players, config.target_score) == (3, 50)
    assert type(config.num_players) is int and type(config.target_score) is int


def test_bots_and_envs_check_seeds_alike():
    from okgin_env.bots import make_bot

    for name in ("random", "simple", "search"):
        with pytest.raises(ValueError, match="non-negative int"):
            make_bot(name, seed=-3)
        assert make_bot(name, seed=np.int64(3)) is not None


def test_every_rule_option_is_documented_by_the_env_and_explained_in_words():
    """Hand-kept option lists drift (issue 54): the env's docstring names every option, and the
    text protocol explains each in words rather than as a bare ``Option NAME = value`` line."""
    import importlib

    env_module = importlib.import_module("okgin_env.env")  # the module (okgin_env.env is also the function)
    from okgin_env.text.describe import _EXPLAINED

    options = set(OPTION_NAMES) - {"rules", "num_players"}
    missing = sorted(name for name in options if f"``{name}``" not in env_module.__doc__)
    assert not missing, f"okgin_env/env.py's docstring does not name {missing}"
    assert set(OPTION_NAMES) <= _EXPLAINED, sorted(set(OPTION_NAMES) - _EXPLAINED)


def test_the_rules_page_shows_every_option_as_declared():
    """docs/rules.md §10: each option's value in each preset and its allowed values are the ones
    ``RulesConfig`` declares (``option_table_rows``), every option once, in the declared order."""
    from pathlib import Path

    from okgin_env.rules.config import option_table_rows

    page = (Path(__file__).resolve().parents[1] / "docs" / "rules.md").read_text(encoding="utf-8")
    section = page[page.index("## §10. Rule options"):]
    header = "| option | `classic` | `standard` | `penalty` | allowed | meaning |"
    lines = section[section.index(header):].split("\n\n")[0].splitlines()[2:]
    shown = [tuple(cell.strip() for cell in line.strip().strip("|").split(" | "))[:5] for line in lines]
    assert shown == option_table_rows()
