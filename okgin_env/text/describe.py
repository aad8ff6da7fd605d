"""``describe``: a plain-text account of one observation; ``describe_outcome``: of a showdown.

Everything ``describe`` says comes from the observation dict (``okgin_env.observation.view``),
so it says no more than the observation holds; the rule options the observation does not carry
come from the optional ``config``. ``describe_outcome`` reads a round's outcome (the
``infos["round_outcome"]`` every agent gets, or a ``RoundOutcome``): the hands shown at a
showdown are public then.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from ..episode import EPISODE_OPTIONS
from ..observation import ObservationView, view
from ..rules.actions import DISCARD_BASE, KNOCK_BASE, TAKE_DISCARD, action_str
from ..rules.cards import NUM_RANKS, card_str, from_mask
from ..rules.config import RulesConfig, make_config
from ..rules.melds import best_melds, deadwood, deadwood_of_mask
from ..rules.round import Phase
from ..rules.showdown import RoundOutcome

#: The rule options ``rules_lines`` explains in words; any other option off its default is listed by name.
_EXPLAINED = frozenset({
    "rules", "num_players", "gin_bonus", "undercut_bonus", "target_score", "ace_upcard_gin_only",
    "allow_discard_taken", "max_turns", "max_reshuffles", "spade_double", "box_bonus", "game_bonus",
    "shutout_multiplier", "knock_limit",
})  # fmt: skip
_PHASE_WORDS = {
    Phase.OFFER: "the upcard offer",
    Phase.DRAW: "taking a card",
    Phase.DISCARD: "discarding or knocking",
    Phase.OVER: "the round is over",
}


# ----------------------------------------------------------------------------- small pieces


def sort_key(card: int) -> tuple[int, int]:
    """Suit (S H D C), then rank (Ace low): the order hands are shown in."""
    return card // NUM_RANKS, card % NUM_RANKS


def cards_text(cards: Iterable[int] | int) -> str:
    """Card texts sorted by suit and rank (a 52-bit mask or ids); ``"none"`` when empty."""
    ids = from_mask(cards) if isinstance(cards, int) else list(cards)
    return " ".join(card_str(c) for c in sorted(ids, key=sort_key)) or "none"


def hand_order(cards: Sequence[int]) -> list[int]:
    """The cards in the order ``hand_text`` shows them: each meld, then the loose cards."""
    melds, loose = best_melds(cards)
    return [c for meld in melds for c in sorted(meld, key=sort_key)] + sorted(loose, key=sort_key)


def hand_text(cards: Sequence[int]) -> str:
    """The hand with melds grouped in brackets and deadwood after a bar, e.g. ``[3H 4H 5H] | KS (10)``."""
    melds, loose = best_melds(cards)
    parts = ["[" + " ".join(card_str(c) for c in sorted(meld, key=sort_key)) + "]" for meld in melds]
    loose_sorted = sorted(loose, key=sort_key)
    value = deadwood(loose_sorted)
    text = " ".join(parts)
    if loose_sorted:
        text = (text + " | " if text else "") + " ".join(card_str(c) for c in loose_sorted)
    return f"{text}   (deadwood {value})"


def is_gin_knock(hand: int, action: int) -> bool:
    """A knock action that leaves no deadwood (a mask ``hand`` holding the knock card)."""
    return action >= KNOCK_BASE and deadwood_of_mask(hand & ~(1 << (action - KNOCK_BASE))) == 0


def move_name(action: int, hand: int) -> str:
    """``action_str``'s name, with ``" (gin)"`` after a knock that is a gin."""
    return action_str(action) + (" (gin)" if is_gin_knock(hand, action) else "")


def legal_move_names(observation: Mapping) -> dict[int, str]:
    """``{action id: name}`` of the legal moves, ascending: ``"draw stock"``, ``"discard 7H"``,
    ``"knock 2C"``, ``"knock 9C (gin)"`` (``action_str``, gin marked); empty when not to act."""
    seen = view(observation)
    return {a: move_name(a, seen.hand) for a in seen.legal}


def opponent_name(k: int, num_players: int) -> str:
    return "your opponent (opponent 1)" if num_players == 2 else f"opponent {k}"


def _title(name: str) -> str:
    """A name at the start of a sentence: "You", "Your opponent", "Opponent 2"; ``player_1`` as is."""
    return name if name.startswith("player_") else name[0].upper() + name[1:]


def rule_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """The rule options of a mapping: a game record's ``env`` also names its episode, reward and
    round cap, which are no rules."""
    return {key: value for key, value in config.items() if key not in EPISODE_OPTIONS}


def rules_of(config: Any, num_players: int) -> RulesConfig | None:
    """``config`` as a ``RulesConfig`` for this player count: None, a ``RulesConfig``, a preset
    name or a mapping of rule options (as ``make_config`` takes them)."""
    if config is None:
        return None
    if isinstance(config, RulesConfig):
        rules = config
    elif isinstance(config, str):
        rules = make_config(config, num_players=num_players)
    elif isinstance(config, Mapping):
        options = rule_options(config)
        options.setdefault("num_players", num_players)
        rules = make_config(**options)
    else:
        raise ValueError(
            f"config must be None, a RulesConfig, a preset name or a mapping of rule options; got {type(config).__name__}"
        )
    if rules.num_players != num_players:
        raise ValueError(f"config is for {rules.num_players} players, the observation for {num_players}")
    return rules


def _hand_size(num_players: int) -> int:
    return RulesConfig(rules="classic" if num_players == 2 else "penalty", num_players=num_players).hand_size


# ----------------------------------------------------------------------------- the rules in words


def game_name(rules: RulesConfig | None) -> str:
    """What the table plays: Oklahoma Gin, where the upcard sets the knock limit, unless the rules
    fix it (the standard preset, or option knock_limit): then plain gin rummy."""
    if rules is None or rules.knock_limit is None:
        return "Oklahoma Gin"
    return "Gin rummy"


def knock_limit_rule(rules: RulesConfig | None) -> str:
    """How the knock limit is set under ``rules`` (None: not known), in words: the upcard's value
    (Oklahoma, with what an Ace means) or the fixed limit in force."""
    if rules is None:
        return ("in Oklahoma Gin the value of the round's first upcard, an Ace meaning gin only (knock limit 0) "
                "unless the table's option says otherwise; the standard preset or option knock_limit fixes it "
                "for every round instead. This round's limit is given below")
    limit = rules.knock_limit
    if limit is None:
        if rules.ace_upcard_gin_only:
            return "the value of the round's first upcard; an Ace upcard means gin only (knock limit 0)"
        return "the value of the round's first upcard; an Ace upcard allows knocking with 1 (option ace_upcard_gin_only is off)"
    source = "the standard preset" if limit == make_config(rules.rules).knock_limit else "option knock_limit"
    return f"{limit} in every round, whatever the upcard ({source}; not Oklahoma's upcard rule){': gin only' if limit == 0 else ''}"


def rules_lines(rules: RulesConfig | None, num_players: int) -> list[str]:
    """The rules in force, in words (``rules`` None: what holds in every preset, and a note)."""
    n, size = num_players, _hand_size(num_players)
    lines = []
    if rules is None:
        preset = "penalty (the only preset for 3-4 players)" if n > 2 else "not given (classic, standard or penalty)"
        lines.append(
            f"Rules: {n} players, {size} cards each; preset {preset}. The rule options are not "
            "part of the observation and were not given (describe(observation, config=...) adds them): bonuses, "
            "scoring and the draw rules are not shown here; the knock limit and the target score below are."
        )
    else:
        lines.append(f"Rules: {game_name(rules)}, preset {rules.rules!r}, {n} players, {size} cards each.")
    lines.append(
        "Melds: a set is 3 or 4 cards of one rank; a run is 3 or more cards of one suit in sequence (Ace low: "
        "A-2-3 is a run, Q-K-A is not). Card values: Ace 1, 2-10 their number, J Q K 10. Deadwood: the total "
        "value of the cards in no meld, for the arrangement that makes it least."
    )
    lines.append(f"Knock limit: {knock_limit_rule(rules)}.")
    taken = ""
    if rules is not None:
        taken = (
            " You may discard the card you just took from the pile (option allow_discard_taken)."
            if rules.allow_discard_taken
            else " You may not discard (nor knock with) the card you just took from the discard pile."
        )
    lines.append(
        "The first turn: the upcard is offered to each player in turn, starting after the dealer (take it or "
        "pass); if all pass, the player after the dealer begins by drawing from the stock. A turn: take the "
        "top card of the stock or of the discard pile, then discard one card face up, or knock: put one card "
        "face down, with the other cards' deadwood at most the knock limit. Gin: a knock with deadwood 0. "
        f"The round ends at a knock.{taken}"
    )
    if rules is None:
        return lines
    if rules.penalty_scoring:
        lines.append(
            "Scoring in penalty points (lower is better). After a knock every other player, in turn after the "
            "knocker, lays out melds and lays off deadwood on the knocker's original melds (not after gin). "
            f"Gin: every other player is charged their deadwood + {rules.gin_bonus}. Knock: each other player is "
            "charged their deadwood minus the knocker's. Undercut: a player with strictly less deadwood than the "
            "knocker undercuts (the least deadwood; a tie goes to the first in turn after the knocker); every other "
            f"player is charged their deadwood minus the undercutter's, the knocker {rules.undercut_bonus} more."
        )
        lines.append(
            "When a discard leaves 2 cards in the stock, the discard pile but its top is shuffled into a new "
            f"stock; after {rules.max_reshuffles} reshuffles in a round, the round is a draw instead."
        )
        lines.append(
            f"The match ends when a player's penalty total reaches {rules.target_score}; the lowest total wins."
        )
    else:
        tie = "a tie is an undercut" if rules.tie_is_undercut else "a tie is not an undercut"
        lines.append(
            "Showdown: the defender lays out melds and lays off deadwood on the knocker's melds (not after gin). "
            "Knock: if the knocker's deadwood is less than the defender's, the knocker scores the difference; "
            f"otherwise ({tie}) the defender undercuts and scores {rules.undercut_bonus} + the difference. "
            f"Gin: the knocker scores {rules.gin_bonus} + the defender's deadwood."
        )
        lines.append("When a discard leaves 2 cards in the stock, the round is a draw: nobody scores.")
        lines.append(f"The match ends when a player's total reaches {rules.target_score}; the highest total wins.")
    lines.append(f"A round that reaches {rules.max_turns} discards is a draw.")
    if rules.spade_double:
        lines.append("A spade upcard doubles the round's score (option spade_double).")
    bonuses = []
    if getattr(rules, "box_bonus", 0):
        bonuses.append(f"each player gets {rules.box_bonus} per round won (box bonus)")
    if getattr(rules, "game_bonus", 0):
        bonuses.append(f"the match winner gets {rules.game_bonus} (game bonus)")
    if getattr(rules, "shutout_multiplier", 1) != 1:
        bonuses.append(f"the winner's final total is multiplied by {rules.shutout_multiplier} if the loser has 0 (shutout)")
    if bonuses:
        lines.append("When the match ends: " + "; ".join(bonuses) + ". The scores below do not include these.")
    defaults = make_config(rules.rules, num_players=rules.num_players)  # the preset's own values are no options
    for f in fields(rules):
        if f.name not in _EXPLAINED and getattr(rules, f.name) != getattr(defaults, f.name):
            lines.append(f"Option {f.name} = {getattr(rules, f.name)!r}.")
    return lines


# ----------------------------------------------------------------------------- describe


def describe(observation: Mapping, config: Any = None) -> str:
    """A complete plain-text account of what the observing player knows (docs/text.md).

    ``observation`` is the dict the environment gives (``{"observation", "action_mask"}``, with
    the default ``observation="cards"``). ``config`` (a ``RulesConfig``, a preset name or a
    mapping of rule options) adds the rule options the observation does not carry: the preset,
    bonuses, scoring, the draw rules; without it those are said to be unknown.
    """
    seen = view(observation)
    rules = rules_of(config, seen.num_players)
    if rules is not None and rules.target_score != seen.target_score:
        raise ValueError(
            f"config has target_score {rules.target_score}, the observation {seen.target_score}: another table's rules"
        )
    lines = [f"== {game_name(rules)}: what you know =="]
    lines += rules_lines(rules, seen.num_players)
    lines.append("")
    lines += _table_lines(seen, rules)
    lines.append("")
    lines += _round_lines(seen, rules)
    lines.append("")
    lines += _turn_lines(seen)
    return "\n".join(lines)


def _table_lines(seen: ObservationView, rules: RulesConfig | None) -> list[str]:
    n = seen.num_players
    order = ", ".join(["you"] + [opponent_name(k, n) for k in range(1, n)])
    if seen.seat_from_dealer == 0:
        dealer = "You are the dealer this round"
    else:
        dealer = f"The dealer this round is {opponent_name(n - seen.seat_from_dealer, n)}"
    lines = [f"Seats in turn order: {order}; opponent k sits k seats after you. {dealer}."]
    if rules is None:
        unit = "match totals" if n == 2 else "penalty totals, lower is better"
    else:
        unit = "penalty totals, lower is better" if rules.penalty_scoring else "match totals, higher is better"
    scores = ", ".join([f"you {seen.scores[0]}"] + [f"{opponent_name(k, n)} {seen.scores[k]}" for k in range(1, n)])
    lines.append(f"Scores ({unit}): {scores}. The match ends when a total reaches {seen.target_score}.")
    return lines


def _round_lines(seen: ObservationView, rules: RulesConfig | None) -> list[str]:
    n, size = seen.num_players, _hand_size(seen.num_players)
    over = seen.phase is Phase.OVER
    limit = seen.knock_limit
    limit_text = "gin only (knock limit 0): you may knock only with deadwood 0" if limit == 0 else (
        f"knock limit {limit}: you may knock with deadwood {limit} or less"
    )
    if rules is not None and rules.knock_limit is None:  # Oklahoma: the upcard set it
        limit_text = f", so {limit_text}"
    elif rules is not None:
        limit_text = f" (the knock limit is fixed, whatever the upcard); {limit_text}"
    else:  # the rules are not known: the observation gives the limit, not where it came from
        limit_text = f"; {limit_text}"
    lines = [f"This round: the upcard (the first face-up card) was {card_str(seen.upcard)}{limit_text}."]
    pile = from_mask(seen.discard_pile)
    if seen.discard_top >= 0:
        rest = [c for c in pile if c != seen.discard_top]
        text = f"Discard pile: {len(pile)} card{'s' if len(pile) != 1 else ''}, top card {card_str(seen.discard_top)}"
        text += " (the only one that can be taken)." if not over else "."
        if rest:
            text += (
                f" Below it (their order is not part of what you see; listed by suit and rank): {cards_text(rest)}."
            )
        lines.append(text)
    else:
        lines.append("Discard pile: empty.")
    lines.append(
        f"Stock: {seen.stock_size} cards, face down. Stock reshuffles this round: {seen.reshuffles}."
    )
    hand = from_mask(seen.hand)
    lines.append(f"Your hand ({len(hand)} cards, by suit and rank): {cards_text(hand)}.")
    melds, loose = best_melds(hand)
    meld_text = " ".join("[" + cards_text(m) + "]" for m in sorted(melds, key=lambda m: sort_key(m[0]))) or "none"
    lines.append(
        f"Your best melds: {meld_text}; unmelded: {cards_text(loose)}; deadwood {deadwood(loose)}."
    )
    for k in range(1, n):
        name = _title(opponent_name(k, n))
        known, passed = seen.opponent_known[k - 1], seen.opponent_passed[k - 1]
        if over:
            shown = from_mask(known)
            if shown:
                lines.append(f"{name} showed: {hand_text(shown)}.")
            else:
                lines.append(f"{name}: no hand shown.")
        else:
            holding = size + (seen.acting_seat == k and seen.phase is Phase.DISCARD)
            lines.append(
                f"{name} holds {holding} cards; known to hold (picked up face up, not thrown since): {cards_text(known)}."
            )
        lines.append(
            f"{name} declined or threw (a declined upcard, a discard top left for the stock, a discard): "
            f"{cards_text(passed)}."
        )
    return lines


def _turn_lines(seen: ObservationView) -> list[str]:
    n = seen.num_players
    top = card_str(seen.discard_top) if seen.discard_top >= 0 else "?"
    if seen.phase is Phase.OVER:
        return [
            "The round is over; the hands shown are above. The showdown (melds, layoffs, points) is in the "
            "round's outcome, not in this observation."
        ]
    if seen.acting_seat != 0:
        who = opponent_name(seen.acting_seat, n) if seen.acting_seat is not None else "nobody"
        return [f"Turn: {who} is to act ({_PHASE_WORDS[seen.phase]}); you have no move now."]
    lines = []
    legal = seen.legal
    if seen.phase is Phase.OFFER:
        lines.append(f"Turn: yours, the upcard offer: take the upcard {top} (take discard) or pass.")
    elif seen.phase is Phase.DRAW:
        if TAKE_DISCARD in legal:
            lines.append(f"Turn: yours, take a card: the top of the stock (draw stock) or the discard top {top} (take discard).")
        else:
            lines.append("Turn: yours; everybody passed the upcard, so you begin by drawing from the stock (draw stock).")
    else:
        text = "Turn: yours, discard one card face up, or knock by putting one face down."
        if seen.taken_card >= 0:
            may = DISCARD_BASE + seen.taken_card in legal
            text += f" You took {card_str(seen.taken_card)} from the discard pile this turn"
            text += "; you may discard it too." if may else ", so you may not discard it (nor knock with it)."
        lines.append(text)
        discards = seen.legal_discards()
        if discards:
            values = {c: deadwood_of_mask(seen.hand & ~(1 << c)) for c in discards}
            least = min(values.values())
            best = cards_text(c for c in discards if values[c] == least)
            lines.append(f"The least deadwood left after a discard is {least} (discarding {best}).")
        knocks = seen.legal_knocks()
        if knocks:
            parts = []
            for c in sorted(knocks, key=sort_key):
                left = deadwood_of_mask(seen.hand & ~(1 << c))
                parts.append(f"{card_str(c)} leaves deadwood {left}" + (" (gin)" if left == 0 else ""))
            lines.append("You may knock: " + "; ".join(parts) + ".")
        else:
            lines.append("You may not knock now (no discard leaves deadwood within the knock limit).")
    names = [move_name(a, seen.hand) for a in legal]
    lines.append("Legal moves: " + ", ".join(names))
    return lines


# ----------------------------------------------------------------------------- the showdown


def describe_outcome(outcome: RoundOutcome | Mapping, seat: int | None = None, config: Any = None) -> str:
    """The end of a round in words: who knocked or went gin, each hand shown with its melds,
    layoffs and deadwood, and the points. ``outcome`` is ``infos["round_outcome"]`` (a dict) or a
    ``RoundOutcome``; with ``seat`` (the reader's seat) players are named as ``describe`` names
    them ("you", "opponent k"), else ``player_0`` …. ``config`` says whether points are scored
    or penalties charged (without it: read from the outcome when only one player scored).
    The card the knocker put face down is not told (it stays face down)."""
    data = outcome.to_dict() if isinstance(outcome, RoundOutcome) else dict(outcome)
    try:
        kind, knocker, winner = data["kind"], data["knocker"], data["winner"]
        deadwoods, melds, layoffs, points = data["deadwood"], data["melds"], data["layoffs"], data["points"]
        hands = data.get("hands") or []
    except KeyError as error:
        needed = "kind, knocker, winner, deadwood, melds, layoffs, points"
        raise ValueError(f"an outcome holds {needed}; {error} is missing") from None
    n = len(points)
    if seat is not None and not (isinstance(seat, int) and 0 <= seat < n):
        raise ValueError(f"seat must be None or a seat in 0..{n - 1}, got {seat!r}")
    rules = rules_of(config, n)

    def name(s: int) -> str:
        if seat is None:
            return f"player_{s}"
        return "you" if s == seat else opponent_name((s - seat) % n, n)

    lines = []
    if kind == "draw":
        lines.append("The round is a draw: nobody scores. The hands:")
    else:
        verb = "went gin" if kind == "gin" else "knocked"
        lines.append(f"{_title(name(knocker))} {verb}. The showdown, from the knocker on:")
    first = knocker if knocker is not None else 0
    for s in [(first + k) % n for k in range(n)]:
        laid = layoffs[s]
        melded = {c for m in melds[s] for c in m} | set(laid)
        loose = [c for c in (hands[s] if hands else []) if c not in melded]
        role = "laid out" if s == knocker else "melds"
        text = f"{_title(name(s))}: {role} " + (" ".join("[" + cards_text(m) + "]" for m in melds[s]) or "none")
        if laid:
            text += f"; laid off on the knocker's melds: {cards_text(laid)}"
        if hands:
            text += f"; unmelded: {cards_text(loose)}"
        text += f"; deadwood {deadwoods[s]}."
        lines.append(text)
    if kind != "draw":
        if rules is not None:
            penalty = rules.penalty_scoring
        else:  # classic: only the winner scores; penalty: the winner is never charged
            penalty = n > 2 or (points[winner] == 0 and any(points))
        if penalty:
            charged = ", ".join(f"{name(s)} {points[s]}" for s in range(n))
            lines.append(f"{kind.capitalize()}: penalty points charged (lower is better): {charged}.")
        else:
            verb = "score" if name(winner) == "you" else "scores"
            lines.append(f"{kind.capitalize()}: {name(winner)} {verb} {points[winner]}.")
    return "\n".join(lines)


__all__ = [
    "cards_text",
    "describe",
    "describe_outcome",
    "hand_text",
    "is_gin_knock",
    "legal_move_names",
    "move_name",
    "rules_lines",
    "rules_of",
    "sort_key",
]
