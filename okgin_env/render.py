"""Text and picture of the table, for ``render_mode="ansi" | "human" | "rgb_array"``.

``render_text(env)`` shows the table from the acting player's side: their hand sorted with its
best melds grouped, the discard pile, the knock limit, the stock, the match scores, whose turn and
the phase; other seats show only what is public (card counts, cards known to be held). When a
round is over it shows the showdown: every hand with its melds, layoffs, deadwood and points.
``seat=`` shows the table from that seat's side whoever is to act (the single-agent env shows
its learner's): the acting player's hand is then hidden like any other.

``render_rgb(env)`` draws the same table as an ``H x W x 3`` uint8 image with Pillow (the
``render`` extra: ``pip install okgin[render]``), imported only when a picture is asked for.
Suits are drawn as shapes, so no font with card symbols is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .rules.actions import action_str
from .rules.cards import NUM_RANKS, RANKS, card_str, card_symbol, card_value, from_mask
from .rules.melds import best_melds
from .rules.round import Phase

PHASE_NAMES = {
    Phase.OFFER: "upcard offer (take or pass)",
    Phase.DRAW: "draw (stock or discard pile)",
    Phase.DISCARD: "discard or knock",
    Phase.OVER: "round over",
}
KIND_NAMES = {"knock": "Knock", "gin": "Gin", "undercut": "Undercut", "draw": "Drawn round"}


# ----------------------------------------------------------------------------- shared helpers


def _raw(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


def _display_order(cards: list[int]) -> list[int]:
    """Rank first, then suit (runs read left to right, sets stay together)."""
    return sorted(cards, key=lambda c: (c % NUM_RANKS, c // NUM_RANKS))


def _grouped(cards: list[int]) -> tuple[list[list[int]], list[int]]:
    """Best melds (each in display order, ordered by their lowest card) and the loose cards."""
    melds, loose = best_melds(cards)
    melds = sorted((_display_order(m) for m in melds), key=lambda m: (m[0] % NUM_RANKS, m[0] // NUM_RANKS))
    return melds, _display_order(loose)


def _cards(cards: list[int]) -> str:
    return " ".join(card_symbol(c) for c in cards) if cards else "-"


def _grouped_text(melds: list[list[int]], loose: list[int]) -> str:
    parts = [f"[{_cards(m)}]" for m in melds]
    if loose:
        parts.append(_cards(loose))
    return " ".join(parts) if parts else "-"


def _agent(raw: Any, seat: int) -> str:
    return raw.possible_agents[seat]


def _taken_card_held_back(st: Any) -> bool:
    """The player to act took a card from the pile that the rules do not let them throw this turn."""
    return st.taken_card >= 0 and not st.discardable() >> st.taken_card & 1


def _limit_text(limit: int) -> str:
    return "gin only" if limit == 0 else f"{limit} or less"


def _showdown_rows(raw: Any, outcome: Any) -> list[dict[str, Any]]:
    """Per seat, in showdown order (knocker first, then turn order): what the showdown revealed."""
    n = len(raw.possible_agents)
    first = outcome.knocker if outcome.knocker is not None else 0
    rows = []
    for k in range(n):
        seat = (first + k) % n
        hand = list(outcome.hands[seat]) if outcome.hands else []
        melds = [_display_order(m) for m in outcome.melds[seat]]
        laid = list(outcome.layoffs[seat])
        in_melds = {c for m in melds for c in m} | set(laid)
        loose = _display_order([c for c in hand if c not in in_melds])
        rows.append(
            {
                "seat": seat,
                "agent": _agent(raw, seat),
                "knocker": seat == outcome.knocker,
                "winner": seat == outcome.winner,
                "melds": melds,
                "layoffs": _display_order(laid),
                "loose": loose,
                "deadwood": outcome.deadwood[seat],
                "points": outcome.points[seat],
                "reward": outcome.rewards[seat],
            }
        )
    return rows


def _outcome_headline(raw: Any, outcome: Any) -> str:
    if outcome.kind == "draw":
        return "Drawn round: nobody scores; the same dealer deals again."
    knocker = _agent(raw, outcome.knocker)
    winner = _agent(raw, outcome.winner)
    if raw.config.penalty_scoring:
        total = sum(outcome.points)
        tail = f"{winner} wins the round; {total} penalty points charged"
    else:
        tail = f"{winner} scores {max(outcome.points)}"
    if outcome.kind == "gin":
        return f"Gin by {knocker}: {tail}."
    if outcome.kind == "undercut":
        return f"{knocker} knocked and was undercut: {tail}."
    return f"Knock by {knocker}: {tail}."


def _showdown_text(raw: Any, outcome: Any) -> list[str]:
    lines = [_outcome_headline(raw, outcome)]
    if outcome.knock_card is not None:
        lines.append(f"  knock discard (face down): {card_symbol(outcome.knock_card)}")
    label = "penalty" if raw.config.penalty_scoring else "points"
    for row in _showdown_rows(raw, outcome):
        role = " (knocker)" if row["knocker"] else ""
        win = " *winner*" if row["winner"] else ""
        melds = " ".join(f"[{_cards(m)}]" for m in row["melds"]) or "-"
        text = f"  {row['agent']}{role}: melds {melds}"
        if row["layoffs"]:
            text += f" | laid off {_cards(row['layoffs'])}"
        text += f" | deadwood {_cards(row['loose'])} = {row['deadwood']} | {label} {row['points']}{win}"
        lines.append(text)
    return lines


# ----------------------------------------------------------------------------- text


def render(env: Any, mode: str | None, seat: int | None = None) -> Any:
    """What ``env.render()`` gives in ``mode``, from ``seat``'s side (None: the acting player's):
    an image (``"rgb_array"``), the text (``"ansi"``), or None after printing it (``"human"``);
    None with Gymnasium's warning when the env has no render mode."""
    if mode is None:
        import gymnasium

        gymnasium.logger.warn("You are calling render method without specifying any render mode.")
        return None
    if mode == "rgb_array":
        return render_rgb(env, seat)
    text = render_text(env, seat)
    if mode == "human":
        print(text)
        return None
    return text


def render_text(env: Any, seat: int | None = None) -> str:
    """The table as text (``render_mode="ansi"``; ``"human"`` prints it), from ``seat``'s side
    (None: the acting player's)."""
    raw = _raw(env)
    st = raw.round_state
    match = raw.match
    config = raw.config
    n = len(raw.possible_agents)
    lines = []
    round_number = match.rounds_played + (0 if st.is_over else 1)
    lines.append(
        f"Oklahoma Gin · {config.rules} · {n} players · round {round_number} · dealer {_agent(raw, st.dealer)}"
    )
    score_label = "penalty points" if config.penalty_scoring else "scores"
    scores = " | ".join(f"{_agent(raw, s)} {match.scores[s]}" for s in range(n))
    lines.append(f"Match {score_label} (target {config.target_score}): {scores}")

    previous = getattr(raw, "last_round_outcome", None)
    if previous is not None and not st.is_over and not st.history and match.outcomes:
        lines.append("Last round:")
        lines += ["  " + line for line in _showdown_text(raw, previous)]
        lines.append("")

    lines.append(
        f"Knock limit: {_limit_text(st.knock_limit)} (upcard {card_symbol(st.upcard)})"
        f" · stock {len(st.stock)} cards"
        + (f" · reshuffles {st.reshuffles}" if config.reshuffle_stock else "")
    )
    top = card_symbol(st.discard_pile[-1]) if st.discard_pile else "-"
    lines.append(f"Discard top: {top} · pile (bottom to top): {_cards(st.discard_pile)}")

    if st.is_over:
        outcome = st.outcome
        lines.append("")
        lines += _showdown_text(raw, outcome)
        if match.is_over:
            winner = _agent(raw, match.winner)
            lines.append(f"Match over: {winner} wins ({score_label}: {scores}).")
        return "\n".join(lines)

    viewer = st.current if seat is None else seat
    for k in range(1, n):
        other = (viewer + k) % n
        known = from_mask(st.known[other])
        text = f"{_agent(raw, other)}: {st.hands[other].bit_count()} cards"
        if known:
            text += f", known to hold {_cards(_display_order(known))}"
        lines.append(text)
    lines.append(f"To act: {_agent(raw, st.current)} · phase: {PHASE_NAMES[st.phase]}")
    hand = st.hand(viewer)
    melds, loose = _grouped(hand)
    deadwood = sum(card_value(c) for c in loose)
    lines.append(f"{_agent(raw, viewer)}'s hand: {_grouped_text(melds, loose)} (deadwood {deadwood})")
    if viewer == st.current:
        if _taken_card_held_back(st):
            lines.append(f"  took {card_symbol(st.taken_card)} from the pile: it may not be thrown this turn")
        lines.append("Legal: " + ", ".join(action_str(a) for a in st.legal_actions()))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- picture

FELT = (22, 96, 58)
FELT_DARK = (14, 70, 42)
INK = (240, 240, 230)
GOLD = (245, 200, 70)
RED = (200, 30, 40)
BLACK = (20, 20, 20)
CARD_EDGE = (120, 120, 120)
BACK = (40, 60, 150)
BACK_LINE = (200, 210, 240)
LAYOFF = (255, 170, 0)

WIDTH = 1000
CARD_W, CARD_H = 60, 84
SMALL_W, SMALL_H = 44, 62


def _pillow():
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError(
            "render_mode='rgb_array' draws with Pillow, which is not installed: pip install okgin[render]"
        ) from error
    return Image, ImageDraw, ImageFont


class _Fonts:
    def __init__(self, image_font: Any):
        self._module = image_font
        self._cache: dict[int, Any] = {}

    def __call__(self, size: int) -> Any:
        if size not in self._cache:
            try:
                self._cache[size] = self._module.load_default(size=size)
            except (TypeError, OSError, ImportError):  # old Pillow or no FreeType: fixed bitmap font
                self._cache[size] = self._module.load_default()
        return self._cache[size]


def _suit_shape(draw: Any, suit: int, cx: float, cy: float, s: float, colour: tuple[int, int, int]) -> None:
    """Spade, heart, diamond or club of half-height ``s`` centred on ``(cx, cy)``."""

    def disc(x: float, y: float, r: float) -> None:
        draw.ellipse([x - r, y - r, x + r, y + r], fill=colour)

    if suit == 2:  # diamond
        draw.polygon([(cx, cy - s), (cx + 0.72 * s, cy), (cx, cy + s), (cx - 0.72 * s, cy)], fill=colour)
    elif suit == 1:  # heart
        disc(cx - 0.46 * s, cy - 0.35 * s, 0.52 * s)
        disc(cx + 0.46 * s, cy - 0.35 * s, 0.52 * s)
        draw.polygon([(cx - 0.97 * s, cy - 0.2 * s), (cx + 0.97 * s, cy - 0.2 * s), (cx, cy + s)], fill=colour)
    elif suit == 0:  # spade
        disc(cx - 0.46 * s, cy + 0.2 * s, 0.5 * s)
        disc(cx + 0.46 * s, cy + 0.2 * s, 0.5 * s)
        draw.polygon([(cx - 0.95 * s, cy + 0.08 * s), (cx + 0.95 * s, cy + 0.08 * s), (cx, cy - s)], fill=colour)
        draw.polygon([(cx, cy + 0.3 * s), (cx - 0.38 * s, cy + s), (cx + 0.38 * s, cy + s)], fill=colour)
    else:  # club
        disc(cx, cy - 0.45 * s, 0.42 * s)
        disc(cx - 0.47 * s, cy + 0.15 * s, 0.42 * s)
        disc(cx + 0.47 * s, cy + 0.15 * s, 0.42 * s)
        draw.polygon([(cx, cy), (cx - 0.35 * s, cy + s), (cx + 0.35 * s, cy + s)], fill=colour)


class _Table:
    """Drawing primitives over one Pillow image."""

    def __init__(self, height: int):
        image_module, draw_module, font_module = _pillow()
        self.image = image_module.new("RGB", (WIDTH, height), FELT)
        self.draw = draw_module.Draw(self.image)
        self.font = _Fonts(font_module)
        self.draw.rounded_rectangle([6, 6, WIDTH - 7, height - 7], radius=24, outline=FELT_DARK, width=8)

    def text(self, xy: tuple[float, float], text: str, size: int = 16, fill=INK, anchor: str = "la") -> None:
        font = self.font(size)
        try:
            self.draw.text(xy, text, font=font, fill=fill, anchor=anchor)
        except (ValueError, TypeError):  # bitmap fonts do not support anchors
            self.draw.text(xy, text, font=font, fill=fill)

    def card(self, x: float, y: float, card: int, small: bool = False, outline=None) -> None:
        w, h = (SMALL_W, SMALL_H) if small else (CARD_W, CARD_H)
        self.draw.rounded_rectangle([x + 2, y + 3, x + w + 2, y + h + 3], radius=7, fill=(0, 40, 20))  # shadow
        self.draw.rounded_rectangle(
            [x, y, x + w, y + h], radius=7, fill=(255, 255, 255), outline=outline or CARD_EDGE, width=3 if outline else 1
        )
        suit = card // NUM_RANKS
        colour = RED if suit in (1, 2) else BLACK
        rank = RANKS[card % NUM_RANKS]
        rank = "10" if rank == "T" else rank
        corner = 15 if small else 19
        self.text((x + 4, y + 2), rank, size=corner, fill=colour)
        _suit_shape(self.draw, suit, x + 4 + corner * 0.35, y + corner + 9, corner * 0.3, colour)
        _suit_shape(self.draw, suit, x + w * 0.58, y + h * 0.62, (w * 0.24), colour)

    def back(self, x: float, y: float, small: bool = False) -> None:
        w, h = (SMALL_W, SMALL_H) if small else (CARD_W, CARD_H)
        self.draw.rounded_rectangle([x + 2, y + 3, x + w + 2, y + h + 3], radius=7, fill=(0, 40, 20))
        self.draw.rounded_rectangle([x, y, x + w, y + h], radius=7, fill=BACK, outline=(255, 255, 255), width=2)
        self.draw.rounded_rectangle([x + 5, y + 5, x + w - 5, y + h - 5], radius=4, outline=BACK_LINE, width=1)
        for row, dy in enumerate(range(10, h - 8, 7)):
            for dx in range(10 + (row % 2) * 3, w - 8, 7):
                self.draw.ellipse([x + dx - 1.5, y + dy - 1.5, x + dx + 1.5, y + dy + 1.5], fill=(90, 110, 200))

    def badge(self, x: float, y: float, w: float, h: float, title: str, value: str, colour=GOLD) -> None:
        self.draw.rounded_rectangle([x, y, x + w, y + h], radius=10, fill=FELT_DARK, outline=colour, width=2)
        self.text((x + w / 2, y + 8), title, size=14, fill=colour, anchor="ma")
        self.text((x + w / 2, y + h - 8), value, size=22, fill=INK, anchor="md")

    def groups(self, x: float, y: float, groups: list[tuple[list[int], Any]], small: bool = False) -> float:
        """Cards left to right, a gap between groups; ``groups`` holds ``(cards, outline)``. Returns the end x."""
        step = (SMALL_W if small else CARD_W) * 0.62
        w = SMALL_W if small else CARD_W
        for cards, outline in groups:
            if not cards:
                continue
            for card in cards:
                self.card(x, y, card, small, outline)
                x += step
            x += w - step + 12
        return x

    def array(self) -> np.ndarray:
        return np.asarray(self.image, dtype=np.uint8).copy()


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _hand_groups(cards: list[int]) -> list[tuple[list[int], Any]]:
    melds, loose = _grouped(cards)
    return [(m, None) for m in melds] + [(loose, None)]


def render_rgb(env: Any, seat: int | None = None) -> np.ndarray:
    """The table as an ``H x W x 3`` uint8 image (``render_mode="rgb_array"``), from ``seat``'s
    side (None: the acting player's)."""
    raw = _raw(env)
    st = raw.round_state
    match = raw.match
    config = raw.config
    n = len(raw.possible_agents)
    over = st.is_over
    small_row = 24 + SMALL_H + 14 + 8
    height = 70 + (n - 1) * small_row + (10 + CARD_H + 40) + (24 + CARD_H + 14) + 16
    table = _Table(height)

    # Header: game, round, dealer, scores.
    round_number = match.rounds_played + (0 if over else 1)
    table.text((24, 20), f"Oklahoma Gin · {config.rules} · round {round_number}", size=22, fill=GOLD)
    label = "penalty" if config.penalty_scoring else "score"
    scores = "   ".join(f"{_agent(raw, s)}: {match.scores[s]}" for s in range(n))
    table.text((WIDTH - 24, 20), f"{label} {scores}   (target {config.target_score})", size=16, anchor="ra")
    table.text((24, 48), f"dealer {_agent(raw, st.dealer)}", size=14)

    outcome = st.outcome if over else None
    rows = {row["seat"]: row for row in _showdown_rows(raw, outcome)} if outcome else {}
    if seat is not None:
        viewer = seat
    else:
        viewer = st.current if not over else (outcome.knocker if outcome and outcome.knocker is not None else 0)

    # Other seats, one row each, in turn order after the viewer.
    y = 70
    for k in range(1, n):
        other = (viewer + k) % n
        y = _draw_seat_row(table, raw, st, other, y, rows.get(other), small=True, face_up=False) + 8

    # Centre: stock, discard top, knock limit, phase / result.
    cy = y + 10
    x = 40
    if st.stock:
        for offset in range(min(3, 1 + len(st.stock) // 12)):
            table.back(x + offset * 3, cy - offset * 3)
    table.text((x + CARD_W / 2, cy + CARD_H + 10), f"stock {len(st.stock)}", size=15, anchor="ma")
    x += CARD_W + 40
    if st.discard_pile:
        if len(st.discard_pile) > 1:
            table.card(x - 6, cy + 4, st.discard_pile[-2])
        table.card(x, cy, st.discard_pile[-1])
    table.text((x + CARD_W / 2, cy + CARD_H + 10), f"discard ({len(st.discard_pile)})", size=15, anchor="ma")
    x += CARD_W + 40
    table.badge(x, cy + 4, 130, 76, "knock limit", "gin only" if st.knock_limit == 0 else f"≤ {st.knock_limit}".replace("≤", "<="))
    table.card(x + 140, cy + 8, st.upcard, small=True)
    table.text((x + 140 + SMALL_W / 2, cy + SMALL_H + 16), "upcard", size=13, anchor="ma")
    x += 230
    if over and outcome is not None:
        table.text((x, cy + 4), KIND_NAMES[outcome.kind].upper(), size=30, fill=GOLD)
        lines = _wrap(_outcome_headline(raw, outcome), 52)
        if outcome.knock_card is not None:
            lines.append(f"knock discard (face down): {card_str(outcome.knock_card)}")
        for i, line in enumerate(lines[:3]):
            table.text((x, cy + 42 + 20 * i), line, size=15)
        if match.is_over:
            table.text((x, cy + 44 + 20 * len(lines[:3])), f"Match over: {_agent(raw, match.winner)} wins", size=18, fill=GOLD)
    else:
        table.text((x, cy + 6), f"{_agent(raw, st.current)} to act", size=24, fill=GOLD)
        table.text((x, cy + 40), PHASE_NAMES[st.phase], size=17)
        if _taken_card_held_back(st):
            table.text((x, cy + 64), f"took {card_str(st.taken_card)} from the pile: may not throw it", size=14)
    y = cy + CARD_H + 40

    # The viewer: the acting player's hand (or the knocker's showdown row).
    _draw_seat_row(table, raw, st, viewer, y, rows.get(viewer), small=False, face_up=True)
    return table.array()


def _draw_seat_row(table: _Table, raw: Any, st: Any, seat: int, y: float, row: dict | None, small: bool,
                   face_up: bool) -> float:
    """One seat: a label line and its cards (``face_up``: the viewer's). Returns the y below the row."""
    agent = _agent(raw, seat)
    h = SMALL_H if small else CARD_H
    if row is not None:  # showdown: every hand face up, melds grouped, layoffs outlined
        role = " (knocker)" if row["knocker"] else ""
        label = "penalty" if raw.config.penalty_scoring else "points"
        table.text((30, y), f"{agent}{role}: deadwood {row['deadwood']} · {label} {row['points']}", size=16,
                   fill=GOLD if row["winner"] else INK)
        groups = [(m, None) for m in row["melds"]] + [(row["loose"], None), (row["layoffs"], LAYOFF)]
        end = table.groups(30, y + 24, groups, small)
        if row["layoffs"]:
            table.text((end, y + 24 + h / 2), "laid off", size=13, fill=LAYOFF, anchor="lm")
        return y + 24 + h + 14
    if face_up:  # the viewer: face up, melds grouped
        hand = st.hand(seat)
        _, loose = _grouped(hand)
        deadwood = sum(card_value(c) for c in loose)
        to_act = " (to act)" if seat == st.current else ""
        table.text((30, y), f"{agent}{to_act}: {len(hand)} cards · deadwood {deadwood}", size=16, fill=GOLD)
        table.groups(30, y + 24, _hand_groups(hand), small)
        return y + 24 + h + 14
    # Another seat: backs, and the cards it is known to hold face up.
    known = _display_order(from_mask(st.known[seat]))
    count = st.hands[seat].bit_count()
    table.text((30, y), f"{agent}: {count} cards" + (" (known cards face up)" if known else ""), size=16)
    x = 30
    step = (SMALL_W if small else CARD_W) * 0.45
    for _ in range(count - len(known)):
        table.back(x, y + 24, small)
        x += step
    if known:
        x += 14
        table.groups(x, y + 24, [(known, None)], small)
    return y + 24 + h + 14
