"""Text and picture of the table (placeholder until the full renderer lands)."""

from __future__ import annotations

import numpy as np

from .rules.cards import card_symbol


def render_text(env) -> str:
    st = env.round_state
    seat = st.current
    lines = [f"knock limit {st.knock_limit}  stock {len(st.stock)}  discard top {card_symbol(st.discard_top) if st.discard_pile else '--'}"]
    lines.append(f"player_{seat}: " + " ".join(card_symbol(c) for c in st.hand(seat)))
    return "\n".join(lines)


def render_rgb(env) -> np.ndarray:
    return np.zeros((300, 400, 3), dtype=np.uint8)
