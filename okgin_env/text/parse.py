"""``parse``: a reply in words to an action id, or a ``ValueError`` saying why not.

Two readers, tried in order (docs/text.md lists every word):

1. ``read_move`` (the terminal's short forms, ``okgin-play`` uses it too): ``d`` / ``draw`` /
   ``s`` / ``stock``, ``t`` / ``take``, ``p`` / ``pass``, a card alone (``TD``: discard it),
   ``x TD`` / ``discard TD`` / ``throw TD``, ``k TD`` / ``knock TD``, ``g TD`` / ``gin TD``.
2. The sentence reader, for anything else ("Draw from the stock.", "I'll knock with 2C, putting
   it face down", "take discard", "knock 9C (gin)"): it finds the move words (draw, take, pick
   up, accept, pass, decline, discard, throw, drop, knock, gin) and the card each one names
   (``7H``, ``10h``, ``7♥``, ``seven of hearts``). A move word after a negation in the same
   clause ("don't take it", "instead of knocking") names no move. In a sentence the cards
   ``AS AD AH AC`` count only in capitals (``as``, ``ad``, ``ah`` are English words).

Then only the moves legal now count: one legal move named is the answer; two different legal
moves named (or a move left unclear, such as "knock" with several possible cards) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..observation import ObservationView, view
from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from ..rules.cards import card_id, card_str
from ..rules.melds import deadwood_of_mask
from ..rules.round import Phase
from .describe import is_gin_knock, move_name

# ----------------------------------------------------------------------------- the terminal's short forms

_DRAW_WORDS = ("d", "draw", "s", "stock")
_TAKE_WORDS = ("t", "take")
_PASS_WORDS = ("p", "pass")
_KNOCK_WORDS = ("k", "knock")
_GIN_WORDS = ("g", "gin")
_DISCARD_WORDS = ("x", "discard", "throw")


def _card_or_none(text: str) -> int | None:
    try:
        return card_id(text)
    except ValueError:
        return None


_SUIT_LETTERS = {"♠": "S", "♤": "S", "♥": "H", "♡": "H", "♦": "D", "♢": "D", "♣": "C", "♧": "C"}
_SYMBOL_CARD = re.compile(r"(10|[0-9AaTtJjQqKk])\s?([♠♤♥♡♦♢♣♧])")


def _with_suit_letters(text: str) -> str:
    """``7♥`` -> ``7H``, ``a♠`` -> ``AS``: a card written with a suit symbol, in capitals."""
    return _SYMBOL_CARD.sub(lambda m: m.group(1).upper() + _SUIT_LETTERS[m.group(2)], text)


def _short_form(text: str) -> tuple[str, int | None, str]:
    """``(kind, card, card word)`` of one line in the short forms; kind ``"bad"`` if it is none."""
    words = _with_suit_letters(text).strip().lower().replace(",", " ").split()
    if not words:
        return "bad", None, ""
    head, rest = words[0], words[1:]
    if head in ("?", "h", "help"):
        return "help", None, ""
    if head in ("q", "quit", "exit"):
        return "quit", None, ""
    if not rest:
        for kind, names in (("draw", _DRAW_WORDS), ("take", _TAKE_WORDS), ("pass", _PASS_WORDS)):
            if head in names:
                return kind, None, ""
        card = _card_or_none(head)
        return ("discard", card, head) if card is not None else ("bad", None, "")
    if len(rest) == 1:
        for kind, names in (("knock", _KNOCK_WORDS), ("gin", _GIN_WORDS), ("discard", _DISCARD_WORDS)):
            if head in names:
                return kind, _card_or_none(rest[0]), rest[0]
    return "bad", None, ""


def read_move(text: str) -> tuple[str, int | None]:
    """``(kind, card)`` of one line in the short forms: kind ``"help"``, ``"quit"``, ``"draw"``,
    ``"take"``, ``"pass"``, ``"discard"``, ``"knock"``, ``"gin"`` (a knock that must be a gin) or
    ``"bad"`` (not a short form: ``parse`` then reads it as a sentence); ``card`` is None when
    the move names none or its card cannot be read (``"k ZZ"`` -> ``("knock", None)``)."""
    kind, card, _ = _short_form(text)
    return kind, card


# ----------------------------------------------------------------------------- the sentence reader

_RANK_WORDS = {
    "ace": "A", "two": "2", "deuce": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "T", "jack": "J", "queen": "Q", "king": "K",
    **{str(r): str(r) for r in range(2, 10)}, "10": "T",
}  # fmt: skip
_SUIT_WORDS = {"spade": "S", "spades": "S", "heart": "H", "hearts": "H", "diamond": "D", "diamonds": "D",
               "club": "C", "clubs": "C"}  # fmt: skip
_VERBS = {
    "draw": ("draw", "draws", "drawing"),
    "take": ("take", "takes", "taking", "pick", "picks", "picking", "pickup", "grab", "grabs", "grabbing",
             "accept", "accepts", "accepting"),
    "pass": ("pass", "passes", "passing", "decline", "declines", "declining", "refuse", "refuses", "refusing"),
    "discard": ("discard", "discards", "discarding", "throw", "throws", "throwing", "drop", "drops", "dropping"),
    "knock": ("knock", "knocks", "knocking"),
    "gin": ("gin",),
}  # fmt: skip
_VERB_OF = {word: kind for kind, words in _VERBS.items() for word in words}
_NOUNS = {"stock": "stock", "deck": "stock", "pile": "pile", "upcard": "pile"}
_NEGATIONS = frozenset({"not", "dont", "doesnt", "never", "wont", "cannot", "cant", "shouldnt", "wouldnt",
                        "couldnt", "mustnt", "avoid", "without", "neither", "nor"})  # fmt: skip
#: Words that may stand between a move word and its card ("knock with the 2C", "take the top card").
_FILLERS = frozenset({"the", "a", "an", "my", "your", "card", "cards", "with", "from", "of", "top", "face", "down",
                      "facedown", "up", "it", "this", "that", "on", "onto", "to", "one", "go", "going", "for", "by",
                      "then", "now", "please", "i", "ill", "will", "would", "id", "we", "lets", "let", "us", "me",
                      "here"})  # fmt: skip
#: Between a draw/take word and "discard", these keep "discard" a noun ("take the top discard").
_NOUN_LEAD = frozenset({"the", "a", "top", "from", "of", "off", "up"})
_CONNECTORS = frozenset({"or", "and", ",", "/"})
_CLAUSE_WORDS = frozenset({"but", "however", "otherwise", "unless", "if"})
_ENGLISH_CARDS = frozenset({"as", "ad", "ah", "ac"})  # cards only in capitals inside a sentence
_TOKEN = re.compile(r"[A-Za-z0-9]+|[.;!?\n]|[,/]")


@dataclass
class _Mention:
    """One move named in a reply."""

    kind: str  # draw, take, pass, discard, knock, gin
    negated: bool
    cards: list[int] = field(default_factory=list)
    target: str | None = None  # "stock" or "pile", for draw/take
    gin: bool = False
    clean: bool = True  # only fillers since the move word (so "knock and discard 2C" is one knock)
    lead: list[str] = field(default_factory=list)  # the words since the move word
    joinable: bool = False  # a connector follows the card: another card is an alternative


_FAMILY = {"draw": "draw", "take": "take", "pass": "pass", "discard": "discard", "knock": "knock", "gin": "knock"}


def _tokens(reply: str) -> list[tuple[str, object]]:
    """``(kind, value)``: ``card`` (id), ``verb`` (move kind), ``noun``, ``neg``, ``stop``, ``word``."""
    text = _with_suit_letters(reply).replace("'", "").replace("\u2019", "")
    raw = _TOKEN.findall(text)
    out: list[tuple[str, object]] = []
    i = 0
    while i < len(raw):
        word, low = raw[i], raw[i].lower()
        nxt = raw[i + 1].lower() if i + 1 < len(raw) else ""
        nxt2 = raw[i + 2].lower() if i + 2 < len(raw) else ""
        if low in _RANK_WORDS and (nxt in _SUIT_WORDS or (nxt == "of" and nxt2 in _SUIT_WORDS)):
            suit = nxt if nxt in _SUIT_WORDS else nxt2
            out.append(("card", card_id(_RANK_WORDS[low] + _SUIT_WORDS[suit])))
            i += 2 if nxt in _SUIT_WORDS else 3
            continue
        i += 1
        if low in ".;!?\n":
            out.append(("stop", low))
        elif (low, nxt) in (("instead", "of"), ("rather", "than")):
            out.append(("neg", low))
            i += 1
        elif (low, nxt) == ("discard", "pile"):
            out.append(("noun", "pile"))
            i += 1
        elif (low, nxt) == ("draw", "pile"):
            out.append(("noun", "stock"))
            i += 1
        elif _VERB_OF.get(low) == "pass" and _VERB_OF.get(nxt2 if nxt in ("on", "to") else nxt, "pass") != "pass":
            out += [("verb", "pass"), ("neg", low)]  # "pass on knocking", "decline to take it": a pass, not that move
        elif low in _VERB_OF:
            out.append(("verb", _VERB_OF[low]))
        elif low in _NOUNS:
            out.append(("noun", _NOUNS[low]))
        elif low in _NEGATIONS:
            out.append(("neg", low))
        elif (card := _card_or_none(low)) is not None and (low not in _ENGLISH_CARDS or word.isupper()):
            out.append(("card", card))
        else:
            out.append(("word", low))
    return out


def _mentions(reply: str) -> tuple[list[_Mention], list[int]]:
    """The moves a sentence names (negated ones included, marked) and the cards named outside any move."""
    mentions: list[_Mention] = []
    loose: list[int] = []
    current: _Mention | None = None
    negate = False
    for kind, value in _tokens(reply):
        if kind == "stop":
            current, negate = None, False
        elif kind == "neg":
            negate = True
        elif kind == "verb":
            if current is not None and current.kind in ("knock", "gin") and value in ("discard", "knock", "gin"):
                # "knock, discarding 2C face down", "knock 9C (gin)", "go gin by knocking": one knock
                if current.clean and not current.negated:
                    current.gin = current.gin or value == "gin"
                    continue
            if (current is not None and current.kind in ("draw", "take") and value == "discard" and not current.cards
                    and current.target is None and all(w in _NOUN_LEAD for w in current.lead)):  # fmt: skip
                current.target = "pile"  # "take the discard": the pile
                continue
            current = _Mention(str(value), negated=negate, gin=value == "gin")
            mentions.append(current)
            negate = False
        elif kind == "noun":
            if current is not None and current.kind in ("draw", "take", "pass") and not current.cards:
                current.target = current.target or str(value)
            if current is not None:
                current.lead.append(str(value))
        elif kind == "card":
            if current is None:
                loose.append(int(value))
            elif not current.cards or current.joinable:
                current.cards.append(int(value))
                current.joinable = False
            else:  # a second card without "or"/"and": it belongs to no move
                current = None
                loose.append(int(value))
        else:
            word = str(value)
            if word in _CLAUSE_WORDS or word == ",":
                negate = False
            if word in _CLAUSE_WORDS:
                current = None
            elif current is not None:
                if word in _CONNECTORS:
                    current.joinable = bool(current.cards)
                    current.clean = current.clean and word in ("and", ",")
                elif word in _FILLERS:
                    pass
                elif current.cards or current.target:
                    current = None  # "take 7H to complete ...": the move's object is done
                else:
                    current.clean = False
                if current is not None:
                    current.lead.append(word)
    return mentions, loose


# ----------------------------------------------------------------------------- resolution


def _phase_refusal(name: str, seen: ObservationView) -> str | None:
    """Why a move called ``name`` does not fit the phase (None in the discard phase for a discard or knock)."""
    top = card_str(seen.discard_top) if seen.discard_top >= 0 else "?"
    if seen.phase is Phase.OFFER:
        return f"'{name}' is not legal now: the upcard {top} is offered to you: take discard or pass"
    if seen.phase is Phase.DRAW:
        if name == "pass":
            return "'pass' is only for the upcard offer; now draw stock or take discard"
        if name == "take discard":
            return "everybody passed the upcard, so this turn begins with draw stock"
        return f"'{name}' is not legal now: first take a card (draw stock or take discard {top})"
    if name in ("draw stock", "take discard", "pass"):
        return f"'{name}' is not legal now: you already took a card this turn: discard one or knock"
    return None


def _why_illegal(action: int, seen: ObservationView) -> str:
    """Why a move the reply named is not legal now, in the protocol's words."""
    phase_refusal = _phase_refusal(move_name(action, seen.hand), seen)
    if phase_refusal is not None:
        return phase_refusal
    card = (action - DISCARD_BASE) if action < KNOCK_BASE else (action - KNOCK_BASE)
    text = card_str(card)
    if not seen.hand >> card & 1:
        return f"you do not hold {text}"
    if card == seen.taken_card and DISCARD_BASE + card not in seen.legal:
        return f"you just took {text} from the discard pile, so you may not discard it (nor knock with it) this turn"
    left = deadwood_of_mask(seen.hand & ~(1 << card))
    limit = "gin only (knock limit 0)" if seen.knock_limit == 0 else f"the knock limit is {seen.knock_limit}"
    return f"knocking with {text} leaves deadwood {left}; {limit}"


def _candidates(mention: _Mention, seen: ObservationView) -> tuple[list[int], list[str]]:
    """The action ids a mention names (legal or not), and why it names none clearly."""
    top = seen.discard_top
    kind = mention.kind
    if kind in ("draw", "take", "pass"):
        if kind == "draw" and mention.target == "pile" or kind == "take" and mention.target != "stock":
            base = TAKE_DISCARD
        else:
            base = DRAW_STOCK if kind != "pass" else PASS
        if not mention.cards:
            return [base], []
        actions, unclear = [], []
        for card in mention.cards:
            if card == top:
                actions.append(TAKE_DISCARD if kind == "draw" else base)
            elif kind == "draw" and mention.target != "pile":
                unclear.append(f"'draw {card_str(card)}': the stock's cards are face down and cannot be chosen")
            else:
                where = f"the top is {card_str(top)}" if top >= 0 else "the pile is empty"
                unclear.append(f"{card_str(card)} is not the top of the discard pile ({where})")
        return actions, unclear
    base = DISCARD_BASE if kind == "discard" else KNOCK_BASE
    if mention.cards:
        actions, unclear = [], []
        for card in mention.cards:
            action = base + card
            if mention.gin and action in seen.legal and not is_gin_knock(seen.hand, action):
                left = deadwood_of_mask(seen.hand & ~(1 << card))
                unclear.append(f"knocking with {card_str(card)} leaves deadwood {left}, so it is not gin "
                               f"(say 'knock {card_str(card)}' to knock anyway)")  # fmt: skip
            else:
                actions.append(action)
        return actions, unclear
    if seen.phase is not Phase.DISCARD:
        return [], [_phase_refusal(kind, seen) or ""]
    if kind == "discard":
        return [], ["'discard' names no card: say which, e.g. 'discard 7H'"]
    knocks = [a for a in seen.legal if a >= KNOCK_BASE and (not mention.gin or is_gin_knock(seen.hand, a))]
    if len(knocks) == 1:
        return knocks, []
    word = "gin" if mention.gin else "knock"
    if not knocks:
        return [], [f"'{word}' is not possible now: " + (
            "no discard leaves deadwood 0" if mention.gin else "no card can be put face down to knock")]
    options = ", ".join(move_name(a, seen.hand) for a in knocks)
    return [], [f"'{word}' names no card, and more than one is possible ({options}): say which"]


def legal_names_text(seen: ObservationView) -> str:
    return ", ".join(move_name(a, seen.hand) for a in seen.legal)


def parse(reply: str, observation: Mapping) -> int:
    """The action id that ``reply`` names for the player of ``observation`` (the env's dict).

    ``ValueError`` (saying what was wrong and listing the legal moves by name) when the reply
    names no legal move, names two different legal moves, or leaves one unclear.
    """
    seen = view(observation)
    if not seen.legal:
        raise ValueError("this observation's player is not to act: no move is legal")

    def refuse(why: str) -> ValueError:
        return ValueError(f"{why}. Legal moves: {legal_names_text(seen)}")

    if not isinstance(reply, str):
        raise refuse(f"the reply must be text (a str), got {type(reply).__name__}")
    kind, card, card_word = _short_form(reply)
    if kind in ("help", "quit"):
        raise refuse(f"{reply.strip()!r} is not a move")
    unreadable_card = card is None and kind in ("discard", "knock", "gin")
    if kind != "bad" and not unreadable_card:
        mentions = [_Mention(kind, negated=False, cards=[] if card is None else [card], gin=kind == "gin")]
        loose: list[int] = []
    else:  # a sentence ("knock now" too: a short form whose card does not read)
        mentions, loose = _mentions(reply)
    named = [m for m in mentions if not m.negated]
    # "Knocking is best: knock with 7D": a card-less knock (discard) word says no more than the one with the card.
    with_card = {_FAMILY[m.kind] for m in named if m.cards}
    named = [m for m in named if m.cards or _FAMILY[m.kind] not in with_card]
    if not mentions and len(set(loose)) == 1:  # a card alone in a sentence ("7H."): discard it, as the short form
        named = [_Mention("discard", negated=False, cards=[loose[0]])]
    if not named and unreadable_card:
        raise refuse(
            f"cannot read the card {card_word!r}: a card is a rank (A 2-9 T J Q K, or 10) and a suit (S H D C), e.g. TD"
        )
    if not named:
        shown = reply.strip() if len(reply.strip()) <= 80 else reply.strip()[:77] + "..."
        extra = " (every move it names is negated)" if mentions else ""
        raise refuse(f"cannot read {shown!r} as a move{extra}")
    legal: list[int] = []
    illegal: list[int] = []
    unclear: list[str] = []
    for mention in named:
        actions, why = _candidates(mention, seen)
        unclear += why
        for action in actions:
            target = legal if action in seen.legal else illegal
            if action not in target:
                target.append(action)
    if len(legal) > 1:
        both = " and ".join(f"'{move_name(a, seen.hand)}'" for a in legal)
        raise refuse(f"the reply names more than one legal move ({both}); answer with exactly one")
    if legal and unclear:
        raise refuse(f"the reply names '{move_name(legal[0], seen.hand)}' but also: {unclear[0]}; answer with exactly one move")
    if legal:
        return legal[0]
    raise refuse(unclear[0] if unclear else _why_illegal(illegal[0], seen))


__all__ = ["parse", "read_move"]
