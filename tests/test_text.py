"""okgin_env.text: describe / parse / legal_move_names / TextPolicy (docs/text.md)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from gymnasium.utils import seeding
from helpers import build_deck

from okgin_env.bots import make_bot
from okgin_env.env import raw_env
from okgin_env.match_loop import play_match
from okgin_env.play import Game
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, NUM_ACTIONS, PASS, TAKE_DISCARD, action_str
from okgin_env.rules.cards import RANKS, SUIT_SYMBOLS, card_id, card_str, from_mask, parse_cards
from okgin_env.rules.config import make_config
from okgin_env.rules.melds import deadwood
from okgin_env.observation import view
from okgin_env.text import (
    TextPolicy,
    TextPolicyError,
    describe,
    describe_outcome,
    legal_move_names,
    parse,
    read_move,
)

TABLES = [("classic", 2), ("penalty", 2), ("penalty", 3), ("penalty", 4)]
RANK_WORDS = ["ace", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "jack", "queen", "king"]
SUIT_WORDS = ["spades", "hearts", "diamonds", "clubs"]
ENGLISH = {"AS", "AD", "AH", "AC"}  # read in a sentence only in capitals


def random_positions(rules: str, players: int, seed: int, count: int, sensible: float = 0.7):
    """``count`` observations of the seat to act (every one where a knock is legal, a share of the
    others), from play that is random one move in three."""
    env = raw_env(rules=rules, num_players=players, episode="match")
    env.reset(seed=seed)
    rng = random.Random(seed)
    bot = make_bot("simple", seed=seed)  # mostly sensible play, so that knocks come up
    out = []
    while len(out) < count:
        if all(env.terminations.values()) or all(env.truncations.values()):
            env.reset(seed=rng.randrange(10**6))
        observation = env.observe(env.agent_selection)
        if observation["action_mask"][KNOCK_BASE:].any() or rng.random() < 0.4:  # every knock position, some others
            out.append(observation)
        legal = np.flatnonzero(observation["action_mask"]).tolist()
        env.step(bot.act(observation) if rng.random() < sensible else rng.choice(legal))
    return out


def phrasings(action: int, observation: dict) -> list[str]:
    """Ways a player may name ``action``, besides ``action_str``'s name."""
    mask = observation["action_mask"]
    if action == DRAW_STOCK:
        return ["d", "draw", "stock", "Draw from the stock.", "I'll draw a card from the stock", "take from the stock"]
    if action == TAKE_DISCARD:
        top = view(observation).discard_top
        text = card_str(top)
        return ["t", "take", "Take the discard.", "pick up the top discard", f"take {text}", f"I take the {text}!",
                f"take the {RANK_WORDS[top % 13]} of {SUIT_WORDS[top // 13]}", "accept the upcard, please"]
    if action == PASS:
        return ["p", "I pass.", "Pass on the upcard", "decline the upcard", "I won't take it; pass"]
    if action < KNOCK_BASE:
        card = action - DISCARD_BASE
        text = card_str(card)
        forms = [text, text.lower(), f"x {text}", f"throw {text}", f"Discard the {text}.", f"discard {text} please",
                 f"I will discard the {RANK_WORDS[card % 13]} of {SUIT_WORDS[card // 13]}",
                 f"discard {RANKS[card % 13]}{SUIT_SYMBOLS[card // 13]}", f"**discard {text}**"]
        if text[0] == "T":
            forms.append(f"discard 10{text[1].lower()}")
        if text not in ENGLISH:
            forms.append(f"ok, i discard the {text.lower()}.")
        knock = KNOCK_BASE + card
        if mask[knock]:
            forms.append(f"instead of knocking, discard {text}")
        return forms
    card = action - KNOCK_BASE
    text = card_str(card)
    forms = [f"k {text}", f"knock with {text}", f"I knock, discarding {text} face down.", f"Knock: {text}"]
    gin = deadwood(from_mask(view(observation).hand & ~(1 << card))) == 0
    if gin:
        forms += [f"gin {text}", f"g {text}", f"knock {text} (gin)", f"I go gin by knocking with {text}"]
    if np.flatnonzero(mask[KNOCK_BASE:]).size == 1:
        forms.append("knock")
    return forms


@pytest.mark.parametrize(("rules", "players"), TABLES)
def test_every_legal_action_round_trips_in_random_positions(rules, players):
    checked = set()
    for observation in random_positions(rules, players, seed=players * 11 + len(rules), count=120):
        names = legal_move_names(observation)
        legal = np.flatnonzero(observation["action_mask"]).tolist()
        assert list(names) == legal
        text = describe(observation, config=make_config(rules, num_players=players))
        assert "Legal moves: " + ", ".join(names.values()) in text
        for action, name in names.items():
            assert name.startswith(action_str(action))
            for reply in [action_str(action), name, name.upper(), *phrasings(action, observation)]:
                assert parse(reply, observation) == action, (reply, name, text)
            checked.add("knock" if action >= KNOCK_BASE else "discard" if action >= DISCARD_BASE else action)
        # A move that is not legal now is refused, with the reason and every legal move by name.
        for action in range(0, NUM_ACTIONS, 7):
            if action not in names:
                with pytest.raises(ValueError) as refused:
                    parse(action_str(action), observation)
                assert "Legal moves: " + ", ".join(names.values()) in str(refused.value)
    assert checked == {DRAW_STOCK, TAKE_DISCARD, PASS, "discard", "knock"}


def gin_positions(rules: str, players: int, seed: int, count: int):
    """Discard-phase observations where a gin is legal: the seat after the dealer holds melds but
    one card and a loose card, takes the missing card as the upcard, and may knock for gin."""
    rng = random.Random(seed)
    size = 10 if players == 2 else 7
    out = []
    while len(out) < count:
        cards: list[int] = []
        for length in ([4, 3, 3] if size == 10 else [4, 3]):
            if rng.random() < 0.5:  # a run
                suit, low = rng.randrange(4), rng.randrange(14 - length)
                meld = [suit * 13 + low + k for k in range(length)]
            else:  # a set (of 3, or 4 when the length is 4)
                rank = rng.randrange(13)
                meld = [s * 13 + rank for s in rng.sample(range(4), min(length, 4))]
            cards += meld
        loose = rng.randrange(52)
        if len(set(cards)) != len(cards) or loose in cards:
            continue
        upcard = cards.pop(rng.randrange(len(cards)))
        hands = [None] * players
        hands[1] = [*cards, loose]
        env = raw_env(rules=rules, num_players=players, episode="round")
        env.reset(options={"deck": build_deck(hands, upcard, hand_size=size), "dealer": 0})
        env.step(TAKE_DISCARD)
        observation = env.observe("player_1")
        assert observation["action_mask"][KNOCK_BASE + loose]  # a gin is within every knock limit
        out.append(observation)
    return out


@pytest.mark.parametrize(("rules", "players"), [("classic", 2), ("penalty", 3)])
def test_gin_knocks_round_trip(rules, players):
    gins = 0
    for observation in gin_positions(rules, players, seed=players, count=25):
        names = legal_move_names(observation)
        for action, name in names.items():
            for reply in [action_str(action), name, *phrasings(action, observation)]:
                assert parse(reply, observation) == action, (reply, name)
            if name.endswith("(gin)"):
                gins += 1
            elif action >= KNOCK_BASE:
                with pytest.raises(ValueError, match="so it is not gin"):
                    parse("gin " + card_str(action - KNOCK_BASE), observation)
    assert gins >= 25


def discard_positions(count=40):
    positions = random_positions("classic", 2, seed=3, count=4 * count)
    return [o for o in positions if o["action_mask"][DISCARD_BASE:KNOCK_BASE].sum() > 1][:count]


def test_ambiguous_replies_are_refused():
    for observation in discard_positions():
        discards = np.flatnonzero(observation["action_mask"][DISCARD_BASE:KNOCK_BASE]).tolist()
        first, second = card_str(discards[0]), card_str(discards[-1])
        for reply in [f"discard {first} or {second}", f"discard {first}, discard {second}", f"Discard {first}. Throw {second}"]:
            with pytest.raises(ValueError, match="more than one legal move"):
                parse(reply, observation)
        with pytest.raises(ValueError, match="names no card"):
            parse("discard", observation)
    positions = random_positions("classic", 2, seed=4, count=60)
    draw = next(o for o in positions if o["action_mask"][[DRAW_STOCK, TAKE_DISCARD]].all())
    for reply in ["draw stock or take discard", "take it or draw from the stock", "I'd take the discard; no, draw"]:
        with pytest.raises(ValueError, match="more than one legal move"):
            parse(reply, draw)
    top, held = card_str(view(draw).discard_top), card_str(from_mask(view(draw).hand)[0])
    assert parse(f"take {top}, then discard {held}", draw) == TAKE_DISCARD  # the discard is not legal yet
    assert parse("don't take it, draw from the stock", draw) == DRAW_STOCK
    assert parse("I will not draw: take the discard", draw) == TAKE_DISCARD


def test_errors_say_what_was_wrong_and_list_the_legal_moves():
    observation = discard_positions(1)[0]
    names = ", ".join(legal_move_names(observation).values())
    hand = from_mask(view(observation).hand)
    missing = card_str(next(c for c in range(52) if c not in hand))
    cases = {
        "hello there": "cannot read 'hello there' as a move",
        f"discard {missing}": f"you do not hold {missing}",
        "draw from the stock": "you already took a card this turn",
        "pass": "you already took a card this turn",
        "x ZZ": "cannot read the card 'zz'",
        "": "cannot read",
        "help": "is not a move",
    }
    for reply, reason in cases.items():
        with pytest.raises(ValueError) as refused:
            parse(reply, observation)
        assert reason in str(refused.value) and str(refused.value).endswith("Legal moves: " + names)
    with pytest.raises(ValueError, match="must be text"):
        parse(38, observation)
    not_to_act = {"observation": observation["observation"], "action_mask": np.zeros(NUM_ACTIONS, np.int8)}
    with pytest.raises(ValueError, match="not to act"):
        parse("discard " + card_str(hand[0]), not_to_act)


# ----------------------------------------------------------------------------- scripted deals

GIN_HAND = "AS 2S 3S 4H 5H 6H 7D 8D 9D KC"  # + the upcard TD: knock KC is gin, knock 7D leaves 10


def gin_table(**options):
    """player_1 (first after dealer 0) is offered TD with a hand that goes gin with it."""
    env = raw_env(episode="round", **options)
    env.reset(options={"deck": build_deck(["5C 6C QC JD QD KD 2H 3H JS QS", GIN_HAND], "TD"), "dealer": 0})
    return env


def test_describe_a_gin_position_knocks_and_taken_card():
    env = gin_table()
    env.step(TAKE_DISCARD)
    observation = env.observe("player_1")
    text = describe(observation, config=env.config)
    for card in parse_cards(GIN_HAND + " TD"):
        assert card_str(card) in text.split("Your hand (11 cards, by suit and rank): ")[1].split("\n")[0]
    assert "knock limit 10" in text
    assert "You took TD from the discard pile this turn, so you may not discard it" in text
    assert "You may knock: 7D leaves deadwood 10; KC leaves deadwood 0 (gin)." in text
    names = legal_move_names(observation)
    assert names[KNOCK_BASE + card_id("KC")] == "knock KC (gin)" and names[KNOCK_BASE + card_id("7D")] == "knock 7D"
    assert parse("gin", observation) == KNOCK_BASE + card_id("KC")
    assert parse("knock 7D", observation) == KNOCK_BASE + card_id("7D")
    with pytest.raises(ValueError, match="not gin"):
        parse("gin 7D", observation)
    with pytest.raises(ValueError, match=r"names no card, and more than one is possible \(knock 7D, knock KC \(gin\)\)"):
        parse("knock", observation)
    with pytest.raises(ValueError, match="you just took TD"):
        parse("discard TD", observation)
    with pytest.raises(ValueError, match="knocking with 9D leaves deadwood 35; the knock limit is 10"):
        parse("knock 9D", observation)
    with pytest.raises(ValueError, match="but also"):
        parse("discard 5H and knock", observation)


def test_negations_and_repeated_move_words():
    env = gin_table()
    offer = env.observe("player_1")
    assert parse("I decline to take it", offer) == PASS == parse("I won't take TD; pass", offer)
    env.step(TAKE_DISCARD)
    observation = env.observe("player_1")
    five = DISCARD_BASE + card_id("5H")
    assert parse("I'll pass on knocking and discard 5H", observation) == five
    assert parse("Don't knock; discard 5H", observation) == five == parse("instead of knocking, throw 5H", observation)
    assert parse("Knocking is best here: knock with 7D.", observation) == KNOCK_BASE + card_id("7D")
    assert parse("knock, putting KC face down", observation) == KNOCK_BASE + card_id("KC")
    for unclear in ["I could knock, but I'll discard 5H", "discard 5H or knock with KC", "discard 5H, not 6H"]:
        with pytest.raises(ValueError):
            parse(unclear, observation)
    with pytest.raises(ValueError, match="every move it names is negated"):
        parse("I won't discard 5H", observation)


def test_describe_shows_opponents_known_cards_what_they_declined_and_the_pile():
    env = gin_table()
    env.step(TAKE_DISCARD)  # player_1 takes the upcard TD ...
    env.step(DISCARD_BASE + card_id("KC"))  # ... and throws KC
    observation = env.observe("player_0")
    text = describe(observation, config=env.config)
    assert "known to hold (picked up face up, not thrown since): TD." in text
    assert "declined or threw (a declined upcard, a discard top left for the stock, a discard): KC." in text
    assert "Discard pile: 1 card, top card KC (the only one that can be taken)." in text
    assert "upcard (the first face-up card) was TD, so knock limit 10" in text
    assert "Turn: yours, take a card" in text and "Legal moves: draw stock, take discard" in text
    env.step(DRAW_STOCK)
    text = describe(env.observe("player_1"), config=env.config)
    assert "declined or threw (a declined upcard, a discard top left for the stock, a discard): KC." in text
    assert "Turn: your opponent (opponent 1) is to act (discarding or knocking); you have no move now." in text
    assert "Your opponent (opponent 1) holds 11 cards" in text


def test_describe_without_config_says_what_it_leaves_out_and_checks_a_given_config():
    env = gin_table()
    observation = env.observe("player_1")
    text = describe(observation)
    assert "preset not given (classic, standard or penalty)" in text and "were not given" in text
    assert "Gin: the knocker scores" not in text
    assert "Gin: the knocker scores 25 + the defender's deadwood" in describe(observation, config="classic")
    assert "Gin: the knocker scores 20 + " in describe(observation, config={"gin_bonus": 20})
    with pytest.raises(ValueError, match="target_score"):
        describe(observation, config={"target_score": 50})
    with pytest.raises(ValueError, match="3 players"):
        describe(observation, config=make_config("penalty", num_players=3))
    with pytest.raises(ValueError, match="config must be"):
        describe(observation, config=3)
    penalty = raw_env(rules="penalty", num_players=3, box_bonus=0)
    penalty.reset(seed=1)
    text = describe(penalty.observe(penalty.agent_selection))
    assert "preset penalty (the only preset for 3-4 players)" in text and "opponent 2" in text
    text = describe(penalty.observe(penalty.agent_selection), config=penalty.config)
    assert "penalty points" in text and "after 3 reshuffles" in text
    ace = raw_env(ace_upcard_gin_only=False, spade_double=True)
    ace.reset(options={"deck": build_deck(["5C 6C QC JD QD KD 2H 3H JS QS", GIN_HAND], "AC"), "dealer": 0})
    text = describe(ace.observe("player_1"), config=ace.config)
    assert "an Ace upcard allows knocking with 1" in text and "knock limit 1" in text and "spade upcard doubles" in text


def test_the_round_over_observation_and_the_outcome_show_the_showdown():
    env = gin_table()
    env.step(TAKE_DISCARD)
    env.step(KNOCK_BASE + card_id("KC"))
    outcome = env.infos["player_0"]["round_outcome"]
    text = describe_outcome(outcome, seat=0, config=env.config)
    assert text.startswith("Your opponent (opponent 1) went gin.")
    assert "Your opponent (opponent 1): laid out [AS 2S 3S] [4H 5H 6H] [7D 8D 9D TD]; unmelded: none; deadwood 0." in text
    assert "You: melds" in text and "Gin: your opponent (opponent 1) scores" in text
    assert "KC" not in text  # the knock card stays face down
    assert describe_outcome(outcome).startswith("player_1 went gin.")
    assert describe_outcome(env.last_round_outcome, seat=1).startswith("You went gin.")
    over = describe(env.observe("player_0"), config=env.config)
    assert "Your opponent (opponent 1) showed: [AS 2S 3S] [4H 5H 6H] [7D 8D 9D TD]" in over
    assert "The round is over" in over and "Legal moves" not in over
    with pytest.raises(ValueError, match="missing"):
        describe_outcome({"kind": "gin"})


# ----------------------------------------------------------------------------- no leak


def swapped_decks(players: int, seed: int):
    """Two decks for dealer 0 that differ only in cards player_0 cannot see: a card of the last
    seat's hand swapped with the stock's bottom card, and the two bottom stock cards swapped."""
    deck = list(np.random.default_rng(seed).permutation(52))
    size = 10 if players == 2 else 7
    hidden = next(i for i in range(players * size) if i % players == players - 2)  # dealt to seat players - 1
    hand_swap, stock_swap = list(deck), list(deck)
    hand_swap[hidden], hand_swap[-1] = hand_swap[-1], hand_swap[hidden]
    stock_swap[-1], stock_swap[-2] = stock_swap[-2], stock_swap[-1]
    return deck, hand_swap, stock_swap


@pytest.mark.parametrize(("rules", "players"), TABLES)
def test_deals_that_differ_only_in_unseen_cards_give_the_same_text(rules, players):
    for seed in range(3):
        decks = swapped_decks(players, seed)
        envs = []
        for deck in decks:
            env = raw_env(rules=rules, num_players=players, episode="round")
            env.reset(seed=seed, options={"deck": deck, "dealer": 0})
            envs.append(env)
        assert envs[0].hand(f"player_{players - 1}") != envs[1].hand(f"player_{players - 1}")
        rng = random.Random(seed)
        steps = 0
        while steps < 40 and envs[0].stock_size > 4:
            texts = {describe(env.observe("player_0"), config=env.config) for env in envs}
            assert len(texts) == 1, "player_0's text depends on a card it cannot see"
            agent = envs[0].agent_selection
            legal = [set(np.flatnonzero(env.observe(agent)["action_mask"])) for env in envs]
            common = sorted(a for a in set.intersection(*legal) if a < KNOCK_BASE)  # no showdown: hands would show
            action = int(rng.choice(common))
            for env in envs:
                env.step(action)
            steps += 1
        assert steps >= 30


# ----------------------------------------------------------------------------- TextPolicy


class ScriptedModel:
    """A stand-in for a language model: answers with a legal move from the prompt, phrased as a
    sentence, and now and then with nonsense (to be asked again)."""

    def __init__(self, seed=0, nonsense_every=0):
        self.rng = random.Random(seed)
        self.nonsense_every = nonsense_every
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.nonsense_every and len(self.prompts) % self.nonsense_every == 0:
            return "Hmm, let me think about the melds first."
        line = next(line for line in reversed(prompt.splitlines()) if line.startswith("Legal moves: "))
        moves = line.removeprefix("Legal moves: ").split(", ")
        knocks = [m for m in moves if m.startswith("knock")]
        move = self.rng.choice(knocks) if knocks else self.rng.choice(moves)
        return self.rng.choice([move, f"I will {move}.", f"My move: {move.upper()}"])


@pytest.mark.parametrize(("rules", "players"), [("classic", 2), ("penalty", 3)])
def test_text_policy_plays_a_whole_match_legally(rules, players):
    config = make_config(rules, num_players=players, target_score=60)
    model = ScriptedModel(seed=players, nonsense_every=9)
    policy = TextPolicy(model, config=config)
    others = [make_bot("simple", seed=s) for s in range(1, players)]
    result = play_match(config, [policy, *others], seeding.np_random(5)[0])
    assert not result.truncated and result.winner is not None and result.rounds >= 1
    assert policy.decisions == result.decisions[0] > 20
    assert policy.asks == len(model.prompts) == policy.decisions + policy.refused
    assert policy.refused == policy.asks // 9 > 0 and policy.fallbacks == 0
    reasked = [p for p in model.prompts if "could not be played" in p]
    assert len(reasked) == policy.refused and all("cannot read" in p and "Legal moves" in p for p in reasked)


def test_text_policy_asks_again_then_raises_or_falls_back():
    env = gin_table()
    observation = env.observe("player_1")
    replies = iter(["no idea", "I'd rather take the upcard"])
    prompts = []
    policy = TextPolicy(lambda prompt: prompts.append(prompt) or next(replies), config=env.config, retries=1)
    assert policy.act(observation) == TAKE_DISCARD
    assert prompts[0].startswith("== Oklahoma Gin") and "How to answer" in prompts[0]
    assert "Your reply 'no idea' could not be played: cannot read 'no idea' as a move" in prompts[1]
    assert policy.asks == 2 and policy.refused == 1 and len(policy.last_exchange) == 2
    stubborn = TextPolicy(lambda prompt: "discard QS", retries=2)
    with pytest.raises(TextPolicyError, match="after 3 asks"):
        stubborn.act(observation)
    assert stubborn.asks == 3
    fallback = TextPolicy(lambda prompt: 42, retries=0, fallback=make_bot("random", seed=1))
    assert fallback.act(observation) in (TAKE_DISCARD, PASS) and fallback.fallbacks == 1
    assert TextPolicy(lambda p: "x", fallback=lambda obs: PASS, retries=0).act(observation) == PASS
    assert TextPolicy(lambda p: "x", fallback=lambda obs: np.int64(PASS), retries=0).act(observation) == PASS
    for move in (50, "x", 1.0, True, -1, None):  # probe 5: passed on (50) or numpy's words ("x")
        with pytest.raises(TextPolicyError, match=r"the fallback played .*, which is not a legal action id now \(legal: "):
            TextPolicy(lambda p: "x", fallback=lambda obs, move=move: move, retries=0).act(observation)
    # A game record's env names its episode, reward and round cap beside the rules: a config too (probe 5).
    record_env = {**env.config.to_dict(), "episode": "round", "reward": "win", "max_rounds": 200}
    assert TextPolicy(lambda p: "take", config=record_env).act(observation) == TAKE_DISCARD
    assert describe(observation, record_env) == describe(observation, env.config)
    for bad in [dict(retries=-1), dict(retries=1.5), dict(fallback=3), dict(config="poker"), dict(config={"gin": 1})]:
        with pytest.raises(ValueError):
            TextPolicy(lambda p: "pass", **bad)
    with pytest.raises(ValueError, match="callable"):
        TextPolicy("pass")


def test_text_policy_tells_the_last_showdown_once():
    env = gin_table()
    env.step(TAKE_DISCARD)
    env.step(KNOCK_BASE + card_id("KC"))
    outcome = env.infos["player_0"]["round_outcome"]
    fresh = gin_table()
    model = ScriptedModel()
    policy = TextPolicy(model, config=fresh.config)
    policy.note_outcome(outcome, seat=1)
    policy.act(fresh.observe("player_1"))
    assert model.prompts[0].startswith("How the last round ended:\nYou went gin.")
    policy.act(fresh.observe("player_1"))
    assert not model.prompts[1].startswith("How the last round ended")


# ----------------------------------------------------------------------------- the terminal reads the same words


def test_read_move_keeps_the_terminal_short_forms():
    assert read_move("d") == ("draw", None) and read_move("t") == ("take", None) and read_move("p") == ("pass", None)
    assert read_move("TD") == ("discard", card_id("TD")) and read_move("k TD") == ("knock", card_id("TD"))
    assert read_move("g TD") == ("gin", card_id("TD")) and read_move("draw from the stock") == ("bad", None)


def test_terminal_play_accepts_sentences_and_refuses_a_false_gin():
    p0, p1 = "7H 8H AS 2S 3S 5D 5C 5H KC 2D", "5S 6S TS 3H 4C QH 8D QD JC KS"
    lines = ["What now?", "I'll take the upcard.", "g KC", "knock with KC"]
    output: list[str] = []
    game = Game(opponent="simple", episode="round", deck=build_deck([p0, p1], "9H"), dealer=0,
                input_fn=lambda prompt: lines.pop(0), print_fn=lambda *parts: output.append(" ".join(map(str, parts))))
    result = game.run()
    text = "\n".join(output)
    assert "Not allowed: cannot read 'What now?' as a move. Legal moves: take discard, pass" in text
    assert "You take the upcard 9H." in text
    assert "knocking with KC leaves 2 deadwood, so it is not gin (k KC knocks)" in text
    assert "You knock." in text and result["finished"] and not lines


def test_phase_is_read_from_the_observation():
    env = gin_table()
    observation = env.observe("player_1")
    assert "Turn: yours, the upcard offer: take the upcard TD (take discard) or pass." in describe(observation)
    env.step(PASS)
    env.step(PASS)
    text = describe(env.observe("player_1"))
    assert "everybody passed the upcard, so you begin by drawing from the stock" in text
    with pytest.raises(ValueError, match="everybody passed the upcard"):
        parse("take discard", env.observe("player_1"))


# ----------------------------------------------------------------------------- malformed observations (issue 42)


def test_a_malformed_observation_gets_one_value_error_naming_the_part():
    """describe, parse and legal_move_names read through view(): inf, a 2-D array, strings or an
    all-7s observation give one ValueError naming the part, not an OverflowError or IndexError."""
    env = raw_env()
    env.reset(seed=7)
    observation = env.observe(env.agent_selection)
    obs = observation["observation"]
    knock_limit = np.zeros_like(obs)
    knock_limit[np.arange(obs.size) == 52 * 7] = np.inf  # the first number after the seven card planes
    cases = [
        (obs + knock_limit, r"observation part 'knock_limit': expected finite numbers"),
        (np.stack([obs, obs]), r"one flat \(1-d\) array, got an array of shape \(2, "),
        (obs.astype(str), r"an observation holds numbers .*got dtype <U"),
        (np.full_like(obs, 7.0), r"observation part 'hand': a card plane holds 0 or 1 per card, got 7\.0"),
    ]
    for array, words in cases:
        bad = {**observation, "observation": array}
        for read in (describe, legal_move_names, lambda o: parse("draw", o), TextPolicy(lambda prompt: "pass").act):
            with pytest.raises(ValueError, match=words):
                read(bad)


def test_the_rules_text_states_a_fixed_knock_limit_and_the_presets():
    """Issue 52, 7: under 'standard' or a fixed knock_limit the text said the upcard sets the limit
    ("an Ace upcard means gin only"), then "Option knock_limit = 10"; without a config it named
    only classic and penalty; okgin-play said "gin only (Ace upcard)" for any limit 0."""
    for options, rule in (({"rules": "standard"}, "Knock limit: 10 in every round, whatever the upcard (the standard preset"),
                          ({"knock_limit": 7}, "Knock limit: 7 in every round, whatever the upcard (option knock_limit"),
                          ({"rules": "penalty", "knock_limit": 0}, "option knock_limit; not Oklahoma's upcard rule): gin only.")):
        env = gin_table(**options)
        text = describe(env.observe("player_1"), config=env.config)
        assert rule in text and "Rules: Gin rummy, preset" in text and "Oklahoma Gin" not in text
        assert "first upcard" not in text and "Option knock_limit" not in text and "Option undercut_bonus" not in text
        assert "the upcard (the first face-up card) was TD (the knock limit is fixed, whatever the upcard);" in text
    env = gin_table()
    text = describe(env.observe("player_1"), config=env.config)
    assert "Rules: Oklahoma Gin, preset 'classic'" in text and "was TD, so knock limit 10" in text
    assert "Knock limit: the value of the round's first upcard; an Ace upcard means gin only (knock limit 0)." in text
    text = describe(env.observe("player_1"))
    assert "preset not given (classic, standard or penalty)" in text and "option knock_limit fixes it" in text
    assert "was TD; knock limit 10" in text  # the limit, not where it came from
    p0, p1 = "7H 8H AS 2S 3S 5D 5C 5H KC 2D", "5S 6S TS 3H 4C QH 8D QD JC KS"
    lines = ["?", "t", "k KC", "q"]
    output: list[str] = []
    game = Game(opponent="simple", episode="round", deck=build_deck([p0, p1], "9H"), dealer=0, knock_limit=0,
                input_fn=lambda prompt: lines.pop(0), print_fn=lambda *parts: output.append(" ".join(map(str, parts))))
    game.run()
    text = "\n".join(output)
    assert "knocking with KC leaves 2 deadwood; gin only (knock limit 0)" in text and "Ace upcard" not in text
    assert "0 in every round, whatever the upcard" in " ".join(text.split()) and "first upcard" not in text
    assert "upcard 9H: gin only (fixed for every round)" in text
