"""The ``knock_limit`` option and the ``standard`` preset (docs/rules.md §3, §10), scripted with
injected decks: a fixed limit replaces the upcard's, in the rules core and every engine."""

from __future__ import annotations

import numpy as np
import pytest

import okgin_env
from okgin_env import make_config

from okgin_env.rules.showdown import knock_outcome

from tests.helpers import build_deck, card_id, knock, knocks_in, mask, new_round

# Three runs and the 9D: drawing the KD, a knock with the KD keeps 9 of deadwood, one with the 9D
# keeps 10; any other throw breaks a run.
KNOCKER = "AS 2S 3S 4H 5H 6H 9C TC JC 9D"
OTHER = "KS KH QD JD 8S 8H 6D 4D 3C 5C"


def test_standard_preset_values():
    config = make_config("standard")
    assert (config.knock_limit, config.gin_bonus, config.undercut_bonus, config.num_players) == (10, 25, 25, 2)
    assert config.tie_is_undercut and not config.penalty_scoring and not config.reshuffle_stock
    with pytest.raises(ValueError, match=r"num_players=3 is not allowed with rules='standard'; allowed: \[2\]"):
        make_config("standard", num_players=3)


@pytest.mark.parametrize("value, message", [(11, "int in 0..10"), (-1, "int in 0..10"), ("10", "int in 0..10"),
                                            (True, "int in 0..10"), (2.0, "int in 0..10")])
def test_bad_knock_limit_is_refused_with_what_is_allowed(value, message):
    with pytest.raises(ValueError, match=message):
        make_config("classic", knock_limit=value)


@pytest.mark.parametrize("upcard", ["AH", "3D", "TH", "KC"])
def test_standard_knock_limit_is_ten_whatever_the_upcard(upcard):
    state = new_round([OTHER, KNOCKER], upcard, stock="8C", dealer=1, rules="standard")
    assert state.knock_limit == 10
    classic = new_round([OTHER, KNOCKER], upcard, stock="8C", dealer=1)
    assert classic.knock_limit == {"AH": 0, "3D": 3, "TH": 10, "KC": 10}[upcard]


@pytest.mark.parametrize("limit, can_knock", [(0, False), (5, False), (8, False), (9, True), (10, True)])
def test_a_fixed_limit_decides_the_knock(limit, can_knock):
    # Dealer 1: seat 0 is offered the upcard (a 3: Oklahoma's limit would be 3); both pass, seat 0
    # draws the KD and may knock with it only where the fixed limit allows 9, with the 9D at 10.
    state = new_round([KNOCKER, OTHER], "3D", stock="KD", dealer=1, knock_limit=limit)
    assert state.knock_limit == limit
    state.apply(2)
    state.apply(2)
    state.apply(0)
    assert knocks_in(state.legal_actions()) == {card_id(c) for c in ["KD", "9D"][: (limit >= 9) + (limit >= 10)]}
    assert (knock("KD") in state.legal_actions()) is can_knock


def test_standard_undercut_pays_25_and_a_tie_is_an_undercut():
    # Knocker 9 (the 9D), defender 9 (the 9H) with nothing to lay off: a tie is an undercut.
    defender = "7S 8S 9S JD QD KD 2D 3D 4D 9H"
    hands = [mask(KNOCKER), mask(defender)]
    standard = knock_outcome(make_config("standard"), hands, 0, 10, card_id("KH"), card_id("QH"))
    assert (standard.kind, standard.deadwood, standard.points) == ("undercut", [9, 9], [0, 25])
    classic = knock_outcome(make_config("classic"), hands, 0, 10, card_id("KH"), card_id("QH"))
    assert (classic.kind, classic.points) == ("undercut", [0, 10])


def test_every_env_takes_the_standard_preset():
    deck = build_deck([OTHER, KNOCKER], "AH", stock="KD", dealer=1)
    aec = okgin_env.env(rules="standard", episode="round")
    aec.reset(options={"deck": deck, "dealer": 1})
    assert aec.unwrapped.round_state.knock_limit == 10  # an Ace upcard: gin only in classic
    batch = okgin_env.BatchEnv(2, rules="standard", episode="round")
    out = batch.reset(options={"deck": [deck, deck], "dealer": 1})
    limit_slice = okgin_env.observation.layout_for(2).slices["knock_limit"]
    assert np.all(out.observations[:, limit_slice] == np.float32(1.0))
    assert [r.knock_limit for r in batch.round_states()] == [10, 10]
