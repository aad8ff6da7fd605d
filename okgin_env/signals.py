"""Signals for the command-line tools: SIGTERM stopping a run as Ctrl-C does, and a block that
a second Ctrl-C must not break (writing a record, ending worker processes)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


class Stopped(KeyboardInterrupt):
    """Raised by the SIGTERM handler of ``sigterm_raises``: SIGTERM stops a run as Ctrl-C does;
    ``signal_name`` says which signal it was."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signal_name = signal.Signals(signum).name


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Inside the block SIGTERM raises ``Stopped`` (a ``KeyboardInterrupt``), so that the tool
    stops cleanly and reports; outside the main thread (where handlers cannot change) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        raise Stopped(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def signals_ignored(*signums: int) -> Iterator[None]:
    """Ignore ``signums`` inside the block (only the main thread may change signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = [(signum, signal.signal(signum, signal.SIG_IGN)) for signum in signums]
    try:
        yield
    finally:
        for signum, handler in previous:
            signal.signal(signum, handler)


__all__ = ["Stopped", "sigterm_raises", "signals_ignored"]
