"""Bounded memos of the rules core's pure functions (the meld solver, the showdown) and of the
features built on them.

Rollouts and searches meet the same hands and end positions again and again, so slower answers
are remembered: each memo is a plain dict, emptied when full (no bookkeeping per call, bounded
memory). No answer depends on a memo. ``clear_memos`` empties every one, for measurements that
must start cold (``benchmarks/bench_labelling.py`` times each path from empty memos).
"""

from __future__ import annotations

_MEMOS: list[dict] = []


def new_memo() -> dict:
    """An empty memo that ``clear_memos`` empties too."""
    memo: dict = {}
    _MEMOS.append(memo)
    return memo


def remember(memo: dict, key, value, limit: int) -> None:
    """``memo[key] = value``, emptying ``memo`` first when it holds ``limit`` entries."""
    if len(memo) >= limit:
        memo.clear()
    memo[key] = value


def clear_memos() -> None:
    """Empty every memo made by ``new_memo``."""
    for memo in _MEMOS:
        memo.clear()


__all__ = ["clear_memos", "new_memo", "remember"]
