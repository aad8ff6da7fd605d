"""What one seat may see of a round: the hidden-information rule, written once.

``seat_view(state, seat)`` is the only place that decides which of a round's cards a seat is
shown. Every producer of what a seat is given reads it: ``encode`` and both ``PackedEncoder``
paths (the observation arrays), ``view_of_state`` (bots and searches holding the state),
``facts_of_state`` (the network's inputs in labelling) and, through ``encode``, every env's
final observations. The tensor engine mirrors it for many games at once
(``okgin_env.tensor.encode.seat_view_tensors``); ``tests/test_observation.py`` checks the two
agree, and every producer against it.

The rule: a seat sees its own hand; the card it took from the discard pile this turn, only while
it is the seat to act; the discard pile (its top and every card in it) and the round's upcard;
for each other seat, the cards it is publicly known to hold (taken from the pile, not thrown
since) and those it declined or threw, and, once the round is over, the whole hand it showed;
who acts (relative to itself) while the round runs, and where it sits from the dealer; its legal
actions only when it is to act. Never another seat's unshown card, never the stock's order.
"""

from __future__ import annotations

from operator import itemgetter
from typing import NamedTuple

from ..rules.round import Phase, RoundState


class SeatView(NamedTuple):
    """One seat's view of a round. ``planes`` are its card sets as 52-bit masks, in the order of
    the observation layout's card planes (``ObservationLayout.card_planes``): hand, taken card,
    discard top, discard pile, upcard, then for each seat ``k`` places after the viewer what it is
    known to hold (once the round is over: the hand it showed) and what it declined or threw."""

    planes: tuple[int, ...]
    acting_seat: int | None  # seats after the viewer of the seat to act (0: the viewer); None once over
    seat_from_dealer: int
    to_act: bool  # the viewer is to act: its legal actions are its to see

    @property
    def hand(self) -> int:
        return self.planes[0]

    @property
    def taken_card(self) -> int:
        """The card taken from the pile this turn, -1 unless the viewer is to act and took one."""
        return self.planes[1].bit_length() - 1

    @property
    def discard_top(self) -> int:
        """-1: the pile is empty."""
        return self.planes[2].bit_length() - 1

    @property
    def discard_pile(self) -> int:
        return self.planes[3]

    @property
    def upcard(self) -> int:
        return self.planes[4].bit_length() - 1

    @property
    def opponent_known(self) -> tuple[int, ...]:
        return self.planes[5::2]

    @property
    def opponent_passed(self) -> tuple[int, ...]:
        return self.planes[6::2]


def seat_view(state: RoundState, seat: int) -> SeatView:
    """What ``seat`` may see of ``state`` (see the module docstring). ``BatchEnv`` calls it for
    every game at every step, so the other seats are read without a loop over them."""
    n = state.num_players
    current = state.current
    over = state.phase is _OVER
    to_act = current == seat and not over
    shown = state.hands if over else state.known
    taken, pile = state.taken_card, state.discard_pile
    hand = state.hands[seat]
    taken_plane = 1 << taken if to_act and taken >= 0 else 0
    top = 1 << pile[-1] if pile else 0
    # The planes tuple is written out whole: a tuple built by unpacking ``*`` costs twice as much.
    if n == 2:
        planes = (hand, taken_plane, top, state.pile_mask, 1 << state.upcard, shown[1 - seat], state.passed[1 - seat])
    else:
        others = _OTHERS[n][seat]
        opponents = (mask for pair in zip(others(shown), others(state.passed)) for mask in pair)
        planes = (hand, taken_plane, top, state.pile_mask, 1 << state.upcard, *opponents)
    return _tuple_new(SeatView, (planes, None if over else (current - seat) % n, (seat - state.dealer) % n, to_act))


_OVER = Phase.OVER
_tuple_new = tuple.__new__  # the generated SeatView(...) constructor takes three times as long
# For three and four players, each viewer's other seats in play order after it (a tuple getter).
_OTHERS = {n: tuple(itemgetter(*((seat + k) % n for k in range(1, n))) for seat in range(n)) for n in (3, 4)}


__all__ = ["SeatView", "seat_view"]
