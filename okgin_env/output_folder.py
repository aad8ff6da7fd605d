"""``prepare_output_folder``: check, before any game is played, that a command can write its files."""

from __future__ import annotations

import os
import tempfile


def prepare_output_folder(folder: str, refusal: str) -> None:
    """Create ``folder`` if missing and probe it with a temporary file (which also catches
    read-only file systems and a path through a regular file); a ValueError starting with
    ``refusal`` (such as ``"cannot write results to 'x'"``) says what is in the way."""
    existing = folder
    while not os.path.exists(existing) and os.path.dirname(existing) not in ("", existing):
        existing = os.path.dirname(existing)
    if os.path.exists(existing) and not os.path.isdir(existing):
        raise ValueError(f"{refusal}: {existing!r} is not a folder")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        raise ValueError(f"{refusal}: cannot make folder {folder!r}: {error.strerror or error}") from None
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:  # (a file system such as /proc, read-only, or without the rights)
        raise ValueError(f"{refusal}: cannot create a file in folder {folder!r}: {error.strerror or error}") from None


__all__ = ["prepare_output_folder"]
