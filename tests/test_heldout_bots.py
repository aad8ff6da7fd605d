"""The held-out evaluation bots (okgin_env/bots/heldout.py): legal play at every table, seeded
reproducibility, each style rule on a scripted position, and no hidden information read.

Scripted positions are dealt by deck injection (``env.reset(options={"deck", "dealer"})``) or built
with ``RoundState.from_parts`` and encoded for the seat to act, exactly as the env does.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import okgin_env
from okgin_env.bots import BOT_NAMES, HELD_OUT_BOTS, AggressorBot, DefenderBot, SimpleBot, make_bot
from okgin_env.bots import heldout, reading
from okgin_env.observation import view
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD, action_str
from okgin_env.rules.cards import card_id, from_mask, parse_cards, to_mask
from okgin_env.rules.melds import deadwood_of_mask
from okgin_env.rules.round import Phase, RoundState

from tests.helpers import build_deck, observation_of, position

TABLES = [("classic", 2), ("penalty", 2), ("penalty", 3), ("penalty", 4)]
HELD_OUT = [AggressorBot, DefenderBot]


def legal(observation) -> set[int]:
    return {int(a) for a in np.flatnonzero(observation["action_mask"])}


def kind(action: int, phase: Phase) -> str:
    if action >= KNOCK_BASE:
        return "knock"
    if action >= DISCARD_BASE:
        return "discard"
    return {DRAW_STOCK: "stock", TAKE_DISCARD: "take", PASS: "pass"}[action] + ("@offer" if phase is Phase.OFFER else "")


# ----------------------------------------------------------------------------- registry


def test_held_out_bots_are_registered_and_kept_out_of_training():
    from okgin_env.players import check_player

    assert set(HELD_OUT_BOTS) <= set(BOT_NAMES)
    assert isinstance(make_bot("aggressor", seed=1), AggressorBot)
    assert isinstance(make_bot("defender", seed=1, rules="penalty"), DefenderBot)
    for name in HELD_OUT_BOTS:
        check_player(name, purpose="play")
        for purpose in ("teach", "label"):
            with pytest.raises(ValueError, match="held-out bots"):
                check_player(name, purpose=purpose)


@pytest.mark.parametrize("name", HELD_OUT_BOTS)
def test_held_out_bots_check_their_settings(name):
    with pytest.raises(ValueError, match=rf"unknown setting\(s\) \['rollouts'\] for bot '{name}'; its settings: seed"):
        make_bot(name, rollouts=3)
    with pytest.raises(ValueError, match=r"seed=-1 is not allowed"):
        make_bot(name, seed=-1)
    with pytest.raises(ValueError, match=r"rules='bogus' is not allowed"):
        make_bot(name, rules="bogus")


# ----------------------------------------------------------------------------- legality, reproducibility


def play_rounds(bots, rules, num_players, rounds, seed, check=None) -> list[int]:
    """Rounds of the AEC env with ``bots[seat]``; ``check(seat, observation, action)`` sees every move."""
    env = okgin_env.raw_env(rules=rules, num_players=num_players, episode="round")
    actions = []
    for r in range(rounds):
        env.reset(seed=seed + r)
        while not any(env.terminations.values()):
            agent = env.agent_selection
            seat = env.agent_name_mapping[agent]
            observation = env.observe(agent)
            action = bots[seat].act(observation)
            if check:
                check(seat, observation, action)
            actions.append(action)
            env.step(action)
    return actions


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
@pytest.mark.parametrize("bot_class", HELD_OUT, ids=HELD_OUT_BOTS)
def test_held_out_bots_play_only_legal_moves_in_every_phase(table, bot_class):
    rules, n = table
    kinds: set[str] = set()
    for game, others in enumerate(("random", "simple", "aggressor", "defender")):
        bots = [bot_class(seed=game)] + [make_bot(others, seed=10 * game + k) for k in range(1, n)]
        rotation = game % n  # the held-out bot sits at every seat in turn
        bots = bots[-rotation:] + bots[:-rotation] if rotation else bots

        def check(seat, observation, action, bots=bots):
            assert action in legal(observation), (seat, action)
            if isinstance(bots[seat], bot_class):
                kinds.add(kind(action, view(observation).phase))

        play_rounds(bots, rules, n, rounds=6 if n == 2 else 3, seed=100 * game, check=check)
    assert {"discard", "knock", "stock", "take"} <= kinds
    assert {"pass@offer", "take@offer"} & kinds


@pytest.mark.parametrize("name", HELD_OUT_BOTS)
def test_held_out_bots_are_reproducible_for_a_seed(name):
    def run(seed):
        return [play_rounds([make_bot(name, seed=seed + k) for k in range(n)], rules, n, 2, seed=3)
                for rules, n in (("classic", 2), ("penalty", 4))]  # fmt: skip

    assert run(1) == run(1)


@pytest.mark.parametrize("bot_class", HELD_OUT, ids=HELD_OUT_BOTS)
def test_held_out_bots_break_ties_with_their_seed(bot_class):
    # Loose QC and KC and nothing else differs: throwing either leaves the same outlook and danger.
    state = position(["AS 2S 3S 5H 6H 7H 9D 9S 9C QC KC", "4D 5D 6D JH JD JS 2C 3C 8S TH"], "8H")
    observation = observation_of(state)
    choices = {bot_class(seed=seed).act(observation) for seed in range(30)}
    assert choices == {DISCARD_BASE + card_id("QC"), DISCARD_BASE + card_id("KC")}


# ----------------------------------------------------------------------------- the aggressor's style

OPPONENT = "5S 6S TS 3H TH JH 8D QD JD KS"  # seat 1's hand in the knock positions (upcard 9D: limit 9)


def test_aggressor_knocks_at_the_first_chance_and_the_defender_waits():
    # 7H 8H 9H, AS 2S 3S, 5D 5C 5H; loose KC and 2D: knocking with KC leaves 2.
    observation = observation_of(position(["7H 8H 9H AS 2S 3S 5D 5C 5H KC 2D", OPPONENT], "9D"))
    for seed in range(5):
        assert AggressorBot(seed=seed).act(observation) == KNOCK_BASE + card_id("KC")
        assert DefenderBot(seed=seed).act(observation) == KNOCK_BASE + card_id("KC")  # 2 is clearly low
    # Loose KC and 7C: knocking leaves 7. The aggressor knocks at once, the defender holds and discards.
    observation = observation_of(position(["7H 8H 9H AS 2S 3S 5D 5C 5H KC 7C", OPPONENT], "9D"))
    assert KNOCK_BASE + card_id("KC") in legal(observation)
    assert SimpleBot(seed=0).act(observation) == KNOCK_BASE + card_id("KC")
    for seed in range(5):
        assert AggressorBot(seed=seed).act(observation) == KNOCK_BASE + card_id("KC")
        assert DefenderBot(seed=seed).act(observation) == DISCARD_BASE + card_id("KC")


def test_aggressor_takes_a_low_card_that_melds_with_nothing():
    # The upcard AD melds with nothing, but AD for KC lowers the deadwood by 9: simple and the
    # defender pass it, the aggressor takes it.
    p1 = "7C 8C AS 2S 3S 5D 9D 6H KC 2H"
    deck = build_deck([None, parse_cards(p1)], "AD", dealer=0)
    env = okgin_env.env()
    env.reset(options={"deck": deck, "dealer": 0})
    observation = env.observe("player_1")
    assert legal(observation) == {TAKE_DISCARD, PASS}
    assert AggressorBot(seed=0).act(observation) == TAKE_DISCARD
    assert SimpleBot(seed=0).act(observation) == PASS
    assert DefenderBot(seed=0).act(observation) == PASS


def aggressor_scores(observation) -> dict[int, float]:
    """The aggressor's score of every plain discard: weighted chance to knock after the next
    draw minus the mean deadwood after it (recomputed here from the module's parts)."""
    v = view(observation)
    unseen = [1 << c for c in from_mask(reading.unseen_cards(v))]
    score = {}
    for card in v.legal_discards():
        share, _, mean = reading.draw_outlook(v.hand ^ 1 << card, unseen, v.knock_limit)
        score[card] = heldout.AGGRESSOR_KNOCK_WEIGHT * share - mean
    return score


def test_aggressor_breaks_a_set_for_a_run_when_that_speeds_up_its_knock():
    # 8S 8H 8C is a set, 6H 7H and 5C 6C wait for cards (limit 8, upcard 8D). The least deadwood
    # keeps the set and throws 7H (30), after which no draw lets it knock; the aggressor throws 8S
    # (32): 6H 7H 8H becomes a run and 8C waits beside 5C 6C, so drawing 7C lets it knock.
    observation = observation_of(position(["3S 5S 8S 4H 6H 7H 8H AC 5C 6C 8C", "AS 2S 4S 6S 7S 9S TS JS QS KS"], "8D"))
    v = view(observation)
    score = aggressor_scores(observation)
    assert max(score, key=score.get) == card_id("8S")
    least = min(deadwood_of_mask(v.hand ^ 1 << c) for c in v.legal_discards())
    assert deadwood_of_mask(v.hand ^ 1 << card_id("8S")) > least
    for seed in range(5):
        assert AggressorBot(seed=seed).act(observation) == DISCARD_BASE + card_id("8S")
    assert SimpleBot(seed=0).act(observation) == DISCARD_BASE + card_id("7H")


def test_aggressor_takes_more_deadwood_now_for_a_likelier_knock():
    # Sets KS KH KD and TH TD TC, loose 9H AC 3C 9C JC (limit 10, upcard QD). Throwing JC leaves
    # the least deadwood (22); throwing 3C leaves 29 but more draws that let it knock (5 of 40
    # against 3): the aggressor throws 3C, simple JC.
    observation = observation_of(position(["KS 9H TH KH TD KD AC 3C 9C TC JC", "AS 2S 3S 4S 5S 6S 7S 8S 9S TS"], "QD"))
    v = view(observation)
    unseen = [1 << c for c in from_mask(reading.unseen_cards(v))]
    shares = {c: reading.draw_outlook(v.hand ^ 1 << c, unseen, v.knock_limit).knock for c in v.legal_discards()}
    assert shares[card_id("3C")] == max(shares.values()) > shares[card_id("JC")]
    for seed in range(5):
        assert AggressorBot(seed=seed).act(observation) == DISCARD_BASE + card_id("3C")
    assert SimpleBot(seed=0).act(observation) == DISCARD_BASE + card_id("JC")


# ----------------------------------------------------------------------------- the defender's style


def defender_discards(state: RoundState, seeds=range(10)) -> set[str]:
    return {action_str(DefenderBot(seed=s).act(observation_of(state))) for s in seeds}


def test_defender_does_not_feed_a_card_beside_one_the_opponent_took():
    # Seat 1 took 8C from the pile. Seat 0's loose 9C and 9D leave the same deadwood and the same
    # next-draw outlook; 9C could make a run with 8C: the defender throws 9D, simple either.
    hands = ["AS 2S 3S 5H 6H 7H JS QS KS 9C 9D", "8C 4S 5S 2H 3H TH TS QC 4D 6C"]
    state = position(hands, "5C 2D", known=["", "8C"])  # limit 5: no knock
    assert defender_discards(state) == {"discard 9D"}
    simple = {SimpleBot(seed=s).act(observation_of(state)) for s in range(30)}
    assert simple == {DISCARD_BASE + card_id("9C"), DISCARD_BASE + card_id("9D")}  # so the test can fail


def test_defender_keeps_a_card_that_completes_a_meld_the_opponent_took_even_at_a_cost():
    # Seat 1 took 8C and 9C: TC completes 8C 9C TC. Throwing TC leaves 3 less deadwood than
    # throwing 7D (limit 5, no knock); simple and the aggressor throw TC, the defender 7D.
    hands = ["AS 2S 3S 5H 6H 7H JD QD KD TC 7D", "8C 9C 4S 5S 2H 3H TH TS QC 4D"]
    state = position(hands, "5C 2D", known=["", "8C 9C"])
    assert not knocks_of(observation_of(state))
    assert defender_discards(state) == {"discard 7D"}
    assert SimpleBot(seed=0).act(observation_of(state)) == DISCARD_BASE + card_id("TC")
    assert AggressorBot(seed=0).act(observation_of(state)) == DISCARD_BASE + card_id("TC")
    # Without the taken cards in view the defender throws TC as well: the rule is what it saw.
    assert defender_discards(position(hands, "5C 2D")) == {"discard TC"}


def knocks_of(observation) -> set[int]:
    return {a for a in legal(observation) if a >= KNOCK_BASE}


def test_danger_levels_follow_the_known_and_available_cards():
    c = card_id
    available = to_mask(parse_cards("8C 9C 7C JC 9S 9H"))
    assert heldout.danger_level(c("TC"), to_mask([c("8C"), c("9C")]), available) == "completes"
    assert heldout.danger_level(c("TC"), to_mask([c("9C")]), available) == "near"
    assert heldout.danger_level(c("9D"), 0, available) == "live"  # 9S 9H may be held
    assert heldout.danger_level(c("5D"), 0, available) == "dead"
    # Every opponent counts: a card the third opponent took makes its neighbours dangerous.
    hands = ["AS 2S 3S 9D 9C KD JD 5H", "6H 4S 5S 2H 3H TH TS", "4D 5D 6D 2C 3C QH KH", "7S 8S 9S JH QS KS 8C"]
    state = position(hands, "QC", known=["", "", "", "8C"], rules="penalty", stock=20, dealer=3)
    v = view(observation_of(state))
    unseen = reading.unseen_cards(v)
    assert heldout.discard_danger(c("9C"), v, unseen) > heldout.discard_danger(c("9D"), v, unseen)
    assert DefenderBot(seed=0).act(observation_of(state)) != DISCARD_BASE + c("9C")
    plain = view(observation_of(position(hands, "QC", rules="penalty", stock=20, dealer=3)))  # nothing taken
    plain_unseen = reading.unseen_cards(plain)
    assert heldout.discard_danger(c("9C"), plain, plain_unseen) == heldout.discard_danger(c("9D"), plain, plain_unseen)


def test_defender_knocks_with_gin_low_deadwood_or_a_short_stock():
    hands = ["7H 8H 9H AS 2S 3S 5D 5C 5H KC 9C", OPPONENT]  # knocking with KC leaves 9 (limit 9)
    full = observation_of(position(hands, "9D"))
    short = observation_of(position(hands, "9D", stock=heldout.DEFENDER_LATE_STOCK))
    longer = observation_of(position(hands, "9D", stock=heldout.DEFENDER_LATE_STOCK + 1))
    assert KNOCK_BASE + card_id("KC") in knocks_of(full)
    assert DefenderBot(seed=0).act(full) < KNOCK_BASE and DefenderBot(seed=0).act(longer) < KNOCK_BASE  # holds
    assert DefenderBot(seed=0).act(short) == KNOCK_BASE + card_id("KC")  # the stock runs down
    gin = observation_of(position(["7H 8H 9H AS 2S 3S 5D 5C 5H 6H KC", OPPONENT], "9D"))
    assert DefenderBot(seed=0).act(gin) == KNOCK_BASE + card_id("KC")


def test_defender_takes_the_discard_only_to_meld_it():
    p1 = "7C 8C AS 2S 3S 5D 9D 6H KC 2H"
    for upcard, wanted in (("AD", PASS), ("9C", TAKE_DISCARD)):
        deck = build_deck([None, parse_cards(p1)], upcard, dealer=0)
        env = okgin_env.env()
        env.reset(options={"deck": deck, "dealer": 0})
        assert DefenderBot(seed=0).act(env.observe("player_1")) == wanted


# ----------------------------------------------------------------------------- no hidden information


def shuffled_hidden(state: RoundState, observer: int, rng: random.Random) -> RoundState:
    """A copy whose hidden cards (the stock and the other seats' cards not known) are dealt anew."""
    other = state.clone()
    hidden_by_seat = {s: other.hands[s] & ~other.known[s] for s in range(other.num_players) if s != observer}
    pool = [c for m in hidden_by_seat.values() for c in from_mask(m)] + list(other.stock)
    rng.shuffle(pool)
    for seat, hidden in hidden_by_seat.items():
        count = hidden.bit_count()
        other.hands[seat] = other.known[seat] | to_mask(pool[:count])
        pool = pool[count:]
    other.stock = pool
    other._legal = None
    return other


@pytest.mark.parametrize("table", [("classic", 2), ("penalty", 3)], ids=["classic-2p", "penalty-3p"])
def test_held_out_bots_act_alike_whatever_the_unseen_cards(table):
    """Two deals that differ only in cards the bot cannot see give the same actions."""
    rules, n = table
    rng = random.Random(5)
    compared = 0
    for game in range(4):
        bots = [make_bot(("aggressor", "defender", "simple")[k % 3], seed=k) for k in range(n)]
        env = okgin_env.raw_env(rules=rules, num_players=n, episode="round")
        env.reset(seed=40 + game)
        while not any(env.terminations.values()):
            state = env.round_state
            seat = state.current
            observation = env.observe(env.agent_selection)
            other = shuffled_hidden(state, seat, rng)
            assert other.hands != state.hands or other.stock != state.stock or not other.stock
            other_observation = observation_of(other, seat, scores=None)
            np.testing.assert_array_equal(other_observation["observation"], observation["observation"])
            for bot_class in HELD_OUT:
                assert bot_class(seed=9).act(other_observation) == bot_class(seed=9).act(observation)
            compared += 1
            env.step(bots[seat].act(observation))
    assert compared > 50


def test_a_different_stock_and_opponent_hand_leave_the_first_moves_alike():
    """Deck injection: the same hand and upcard, everything else dealt differently."""
    p1 = parse_cards("7C 8C AS 2S 3S 5D 9D 6H KC 2H")
    other_cards = [c for c in range(52) if c not in p1 and c != card_id("4H")]
    for bot_class in HELD_OUT:
        moves = set()
        for seed in range(3):
            rest = list(other_cards)
            random.Random(seed).shuffle(rest)
            deck = build_deck([rest[:10], p1], "4H", stock=rest[10:], dealer=0)
            env = okgin_env.env()
            env.reset(options={"deck": deck, "dealer": 0})
            moves.add(bot_class(seed=1).act(env.observe("player_1")))
        assert len(moves) == 1
