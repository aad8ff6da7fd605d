"""The shipped policies by name: the player spec ``pretrained:NAME``.

``pretrained:classic`` is the file ``checkpoints/okgin_classic.pt`` of the checkout, installed with
the package (this folder holds links to ``checkpoints/``, which a wheel carries as the files), so a
name works from any folder and from an installed wheel. ``PRETRAINED`` is the one list of names.
"""

from __future__ import annotations

from importlib.resources import files

from ..echo import shown

#: Spec prefix of a shipped policy: ``pretrained:classic``.
PREFIX = "pretrained:"
#: Name -> file in this package (and in ``checkpoints/``). Rules and player count are in each file.
PRETRAINED = {
    "classic": "okgin_classic.pt",
    "standard": "okgin_standard.pt",
    "standard-hands": "okgin_standard_hands.pt",
    "penalty-3p": "okgin_penalty_3p.pt",
    "penalty-4p": "okgin_penalty_4p.pt",
}


def is_pretrained(spec: object) -> bool:
    """Whether ``spec`` is a string naming a shipped policy (``pretrained:NAME``, any name)."""
    return isinstance(spec, str) and spec.startswith(PREFIX)


def pretrained_names() -> str:
    """``pretrained:classic, pretrained:standard, ...``: what an error lists."""
    return ", ".join(PREFIX + name for name in PRETRAINED)


def pretrained_path(spec: str) -> str:
    """The installed file of ``pretrained:NAME`` (or of ``NAME``); a ValueError listing the names if unknown."""
    name = spec[len(PREFIX):] if is_pretrained(spec) else spec
    if name not in PRETRAINED:
        raise ValueError(f"unknown pretrained policy {shown(name)}; allowed: {pretrained_names()}")
    return str(files(__name__) / PRETRAINED[name])
