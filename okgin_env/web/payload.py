"""What the page receives, as plain JSON values: cards, hands, moves, table events and the showdown.

Every card is sent as its text (``"TD"``, ``okgin_env.rules.cards.card_str``), never as an id, so
that a test can find every card a response names with one pattern. Hands are sorted by card id
(suit, then rank), melds first (``best_melds``), then the deadwood cards.

These functions only format what they are given; choosing what a player may see is the caller's
job (``okgin_env.web.game`` passes only the player's observation and public facts during play).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD, action_str
from ..rules.cards import card_str, card_value, from_mask
from ..rules.melds import best_melds, deadwood_of_mask
from ..rules.round import Phase
from ..rules.showdown import RoundOutcome

PHASE_NAMES = {Phase.OFFER: "offer", Phase.DRAW: "draw", Phase.DISCARD: "discard", Phase.OVER: "over"}


def card(card_id: int | None) -> str | None:
    """A card's text, or None for "no card" (None or -1)."""
    return None if card_id is None or card_id < 0 else card_str(card_id)


def cards(card_ids: Iterable[int]) -> list[str]:
    return [card_str(c) for c in sorted(card_ids)]


def hand_layout(card_ids: Iterable[int]) -> dict[str, Any]:
    """A hand with its best melds grouped and its deadwood: ``{"melds", "deadwood_cards", "deadwood", "count"}``."""
    held = sorted(card_ids)
    melds, loose = best_melds(held)
    return {
        "melds": [cards(m) for m in sorted(melds, key=min)],
        "deadwood_cards": cards(loose),
        "deadwood": sum(card_value(c) for c in loose),
        "count": len(held),
    }


def move(action: int, hand_mask: int, discard_top: int) -> dict[str, Any]:
    """One legal move of the player holding ``hand_mask``, for a button: its id, its name
    (``action_str``), its kind and card (for a take or a pass, the discard top), and for a knock
    the deadwood it leaves (0: gin)."""
    entry: dict[str, Any] = {"action": action, "name": action_str(action), "card": None}
    if action == DRAW_STOCK:
        entry["kind"] = "draw"
    elif action in (TAKE_DISCARD, PASS):
        entry.update(kind="take" if action == TAKE_DISCARD else "pass", card=card(discard_top))
    elif action < KNOCK_BASE:
        entry["kind"] = "discard"
        entry["card"] = card_str(action - DISCARD_BASE)
    else:
        thrown = action - KNOCK_BASE
        left = deadwood_of_mask(hand_mask & ~(1 << thrown))
        entry.update(kind="gin" if left == 0 else "knock", card=card_str(thrown), deadwood_after=left)
    return entry


def table_event(seat: int, action: int, *, card_seen: int | None, private: bool) -> dict[str, Any]:
    """A move as the table saw it. ``card_seen`` is the face-up card it involved (the card taken
    or passed, the card thrown), or the card drawn when ``private`` (the player's own draw). A
    knock by another seat is shown without its card: it is discarded face down."""
    if action >= KNOCK_BASE and not private:
        return {"seat": seat, "move": "knock", "card": None}
    return {"seat": seat, "move": action_str(action), "card": card(card_seen)}


def showdown(outcome: RoundOutcome, scores_after: Sequence[int], shown_to: int | None = None) -> dict[str, Any]:
    """The end of a round: each seat's layout (melds, layoffs, unmelded cards, deadwood), the
    points and the match totals after the round, all public. The knock discard was put face down
    and stays so (``describe_outcome`` does not tell it either): ``knock_card`` is named only when
    the showdown is ``shown_to`` the knocker, who put it there, or to no one seat (``None``: a
    replay, where every card is shown); else it is None."""
    seats = []
    for seat, hand in enumerate(outcome.hands):
        melded = {c for meld in outcome.melds[seat] for c in meld} | set(outcome.layoffs[seat])
        seats.append({
            "seat": seat,
            "melds": [cards(m) for m in sorted(outcome.melds[seat], key=min)],
            "layoffs": cards(outcome.layoffs[seat]),
            "deadwood_cards": cards(c for c in hand if c not in melded),
            "deadwood": outcome.deadwood[seat],
            "points": outcome.points[seat],
        })
    return {
        "kind": outcome.kind,
        "knocker": outcome.knocker,
        "winner": outcome.winner,
        "knock_card": card(outcome.knock_card) if shown_to is None or shown_to == outcome.knocker else None,
        "seats": seats,
        "scores_after": list(scores_after),
    }


def full_hands(hands: Sequence[int]) -> list[dict[str, Any]]:
    """Every seat's hand laid out (replays only: all hands are visible there)."""
    return [hand_layout(from_mask(mask)) for mask in hands]
