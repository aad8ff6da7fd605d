"""The observation codec: what one seat may know, as one flat float32 array built from named slices.

Layout (version ``OBSERVATION_VERSION``), for ``N`` players; "opponent k" is the seat ``k`` places
after the observer (k = 1 … N-1). Card planes hold 52 entries, one per card id (docs/rules.md §1).

| slice | size | meaning |
|---|---|---|
| ``hand`` | 52 | cards in the observer's hand |
| ``taken_card`` | 52 | the card the observer took from the discard pile this turn (may not be discarded) |
| ``discard_top`` | 52 | top card of the discard pile |
| ``discard_pile`` | 52 | every card now in the discard pile (the public history of throws) |
| ``upcard`` | 52 | the round's first upcard (sets the knock limit) |
| ``opponent_k_known`` | 52 | cards opponent k is known to hold (taken from the pile, not thrown since); at the end of a round, the hand they showed |
| ``opponent_k_passed`` | 52 | cards opponent k declined (upcard passed, discard top left for the stock) or threw |
| ``knock_limit`` | 1 | knock limit / 10 (0 = gin only) |
| ``stock_size`` | 1 | cards in the stock / 52 |
| ``phase`` | 4 | one-hot: upcard offer, draw, discard, round over |
| ``acting_seat`` | N | one-hot, relative to the observer (index 0 = the observer is to act) |
| ``seat_from_dealer`` | N | one-hot: 0 = the observer deals, 1 = first after the dealer, … |
| ``scores`` | N | match totals / target_score, observer first, then opponents 1 … N-1 |
| ``target_score`` | 1 | target_score / 100 |
| ``reshuffles`` | 1 | stock reshuffles so far this round (penalty preset) |

Nothing else is encoded: no opponent card that was not shown, no stock order. The option
``observation="features"`` appends ``okgin_env.features.FEATURE_PARTS`` (solver features computed
from the slices above and the action mask). This module is the only place that knows the layout
and its scales (``SCALES``). It is a package of four modules, imported together here:

* ``layout``: ``ObservationLayout`` (named slices per player count), ``SCALES``, ``layout_for``,
  ``layout_of``, ``check_observation``;
* ``encode``: ``encode`` and ``PackedEncoder``, which write the array;
* ``seat``: ``seat_view``, what one seat may see of a round:
  the hidden-information rule, written once, which ``encode``, ``PackedEncoder``,
  ``view_of_state`` and the network's facts read;
* ``views``: ``ObservationView``, ``view``, ``view_of_state``, ``decode``, ``to_text``, which read it.

The entry points:

* ``encode(round_state, scores, target_score, observer)``: one observation;
* ``PackedEncoder``: the observations and action masks of many games at once (``BatchEnv``), a
  few ints per game unpacked with one ``np.unpackbits`` per batch, bit for bit ``encode``'s;
* ``view(observation_dict) -> ObservationView``: the typed decoded view that bots, training
  features and tools read (card sets as 52-bit masks, numbers as ints);
* ``decode`` / ``to_text``: named, readable parts (card texts) of an observation or of the dict
  the environment gives (``env.last()``, ``env.observe(agent)``), for people.

A new slice is added in this package (``ObservationLayout``, ``encode``, ``PackedEncoder``, the view)
and in ``tests/test_observation.py``; nothing else reads positions in the array. The codec imports
nothing above it: the slices of ``observation="features"`` are declared by ``okgin_env.features``
(``register_observation``) when it is imported, as every env does.
"""

from __future__ import annotations

from .encode import PackedEncoder, encode
from .layout import (
    KNOCK_LIMIT_SCALE,
    OBSERVATION_VERSION,
    OBSERVATIONS,
    SCALES,
    STOCK_SCALE,
    TARGET_SCALE,
    ObservationLayout,
    check_observation,
    layout_for,
    layout_of,
    num_players_of,
    register_observation,
)
from .seat import SeatView, seat_view
from .views import ObservationView, decode, hand_from_observation, to_text, view, view_of_state

__all__ = [
    "KNOCK_LIMIT_SCALE", "OBSERVATIONS", "OBSERVATION_VERSION", "SCALES", "STOCK_SCALE", "TARGET_SCALE",
    "ObservationLayout", "ObservationView", "PackedEncoder", "SeatView", "check_observation", "decode", "encode",
    "hand_from_observation",
    "layout_for", "layout_of", "num_players_of", "register_observation", "seat_view", "to_text", "view", "view_of_state",
]
