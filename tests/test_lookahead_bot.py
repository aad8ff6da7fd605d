"""The ``lookahead`` bot (``okgin_env.bots.lookahead``): scripted positions for each of its rules,
its settings, legality at every table, and its outlook against the network's numpy outlook."""

from __future__ import annotations

import numpy as np
import pytest

import okgin_env
from okgin_env.bots import LookaheadBot, LookaheadSettings, SimpleBot, make_bot, reading
from okgin_env.features import outlook_features
from okgin_env.observation import view
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from okgin_env.rules.cards import card_id, from_mask
from okgin_env.rules.melds import deadwood_of_mask

from tests.helpers import build_deck, observation_of, position

TABLES = [("classic", 2), ("penalty", 2), ("penalty", 3), ("penalty", 4)]

# Seat 0 drew 2C: runs 5H 6H 7H and a set of nines; AD and 2C loose (limit 8 under the 8D upcard).
# Knocking with 2C leaves 1 point; discarding 2C instead leaves a hand that goes gin on 4H, 8H or 9H.
HOLD_HANDS = ["5H 6H 7H 9S 9D 9C AD 2C", "KS QS JC 4C 6C 8S TD", "3S 4S 7C TC JD QD KD"]


def hold_position(**settings):
    observation = observation_of(position(HOLD_HANDS, "8D", rules="penalty"))
    return observation, LookaheadBot(seed=0, **settings)


def test_it_holds_a_knock_for_a_likely_gin_and_keeps_the_least_deadwood():
    observation, bot = hold_position()
    v = view(observation)
    assert KNOCK_BASE + card_id("2C") in v.legal and KNOCK_BASE + card_id("AD") in v.legal
    unseen = reading.card_bits(reading.unseen_cards(v))
    gin = {c: reading.draw_outlook(v.hand ^ 1 << c, unseen, v.knock_limit).gin for c in v.legal_discards()}
    # Throwing 2C or AD leaves the same three gin cards of the same unseen ones: the tie goes to the least deadwood.
    assert gin[card_id("2C")] == gin[card_id("AD")] == max(gin.values()) == 3 / len(unseen)
    assert bot.act(observation) == DISCARD_BASE + card_id("2C")
    assert SimpleBot(seed=0).act(observation) == KNOCK_BASE + card_id("2C")


@pytest.mark.parametrize("hold_for_gin", [None, 0.5])
def test_it_knocks_when_holding_is_off_or_gin_is_too_unlikely(hold_for_gin):
    observation, bot = hold_position(hold_for_gin=hold_for_gin)
    assert bot.act(observation) == KNOCK_BASE + card_id("2C")


def test_it_goes_gin_at_once():
    hands = ["5H 6H 7H 9S 9D 9C 8H 2C", *HOLD_HANDS[1:]]
    observation = observation_of(position(hands, "8D", rules="penalty"))
    for seed in range(3):
        assert LookaheadBot(seed=seed, hold_for_gin=0.0).act(observation) == KNOCK_BASE + card_id("2C")


def test_it_discards_for_the_best_next_turn():
    # The aggressor's scripted position (test_heldout_bots): breaking the set of eights for a run
    # makes a knock after the next draw possible, which the least deadwood (7H) does not.
    observation = observation_of(position(["3S 5S 8S 4H 6H 7H 8H AC 5C 6C 8C", "AS 2S 4S 6S 7S 9S TS JS QS KS"], "8D"))
    v = view(observation)
    unseen = reading.card_bits(reading.unseen_cards(v))
    scores = {}
    for card in v.legal_discards():
        outlook = reading.draw_outlook(v.hand ^ 1 << card, unseen, v.knock_limit)
        scores[card] = LookaheadSettings().knock_weight * outlook.knock - outlook.mean_deadwood
    assert max(scores, key=scores.get) == card_id("8S")
    assert LookaheadBot(seed=1).act(observation) == DISCARD_BASE + card_id("8S")
    assert LookaheadBot(seed=1, knock_weight=0).act(observation) != DISCARD_BASE + card_id("8S")


def test_it_takes_an_upcard_by_the_margin_over_a_stock_draw():
    # Player 1 may take the 2D upcard: it melds with nothing, but it replaces a king.
    p1 = "7C 8C AS 2S 3S 5D 9D 6H KC 2H"
    env = okgin_env.env()
    env.reset(options={"deck": build_deck([None, [card_id(c) for c in p1.split()]], "2D", dealer=0), "dealer": 0})
    observation = env.observe("player_1")
    v = view(observation)
    after_take = reading.least_deadwood_after_take(v.hand, v.discard_top)
    mean_draw = reading.draw_outlook(v.hand, reading.card_bits(reading.unseen_cards(v)), v.knock_limit).mean_deadwood
    assert after_take > v.knock_limit
    gap = mean_draw - after_take
    assert gap > 0
    assert LookaheadBot(seed=0, take_margin=gap - 0.5).act(observation) == TAKE_DISCARD
    assert LookaheadBot(seed=0, take_margin=gap + 0.5).act(observation) == PASS


def test_its_outlook_is_the_networks_outlook():
    """Two implementations of one definition: the bot's solver loop and the numpy outlook inputs."""
    rng = np.random.default_rng(5)
    for _ in range(40):
        cards = rng.permutation(52)
        hand = sum(1 << int(c) for c in cards[:7])
        unseen = sum(1 << int(c) for c in cards[7:7 + int(rng.integers(1, 40))])
        limit = int(rng.integers(0, 11))
        knock, gin, mean = reading.draw_outlook(hand, reading.card_bits(unseen), limit)
        row = outlook_features(np.array([hand]), np.array([unseen]), np.array([limit]))[0]
        assert row == pytest.approx([knock, gin, mean / 50.0], abs=1e-6)


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_it_plays_legal_moves_at_every_table_and_is_reproducible(table):
    rules, players = table
    def play(seed):
        env = okgin_env.env(rules=rules, num_players=players, target_score=40)
        env.reset(seed=seed)
        bots = [LookaheadBot(seed=seed + i, rules=rules) for i in range(players)]
        actions = []
        for agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            action = bots[env.agent_name_mapping[agent]].act(observation)
            assert observation["action_mask"][action] == 1
            actions.append(action)
            env.step(action)
        return actions
    first = play(3)
    assert first == play(3)
    assert {DRAW_STOCK} <= set(first) and any(a >= KNOCK_BASE for a in first)


@pytest.mark.parametrize("settings, message", [
    ({"knock_weight": -1}, "knock_weight=-1 is not allowed"),
    ({"hold_for_gin": "often"}, "hold_for_gin='often' is not allowed"),
    ({"take_margins": 2}, r"'take_margins': did you mean 'take_margin'\?"),
    ({"settings": {"knock_weight": 3}}, "settings must be a LookaheadSettings"),
])
def test_bad_settings_are_refused_with_the_list(settings, message):
    with pytest.raises(ValueError, match=message):
        make_bot("lookahead", **settings)


def test_settings_by_object_or_by_name_play_alike():
    observation, _ = hold_position()
    by_name = LookaheadBot(seed=2, hold_for_gin=None)
    by_object = LookaheadBot(seed=2, settings=LookaheadSettings(hold_for_gin=None))
    assert by_name.settings == by_object.settings
    assert by_name.act(observation) == by_object.act(observation) == KNOCK_BASE + card_id("2C")
    assert deadwood_of_mask(view(observation).hand ^ 1 << card_id("2C")) == 1
    assert set(from_mask(view(observation).hand)) >= {card_id("AD")}
