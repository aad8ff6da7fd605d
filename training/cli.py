"""A command line over a dataclass of arguments (each field has a default and a ``help``)."""

from __future__ import annotations

import argparse
import dataclasses
import random
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def parse_dataclass_args(cls: type[T], argv: list[str] | None, description: str) -> T:
    """``--field-name VALUE`` for every field of ``cls``; booleans get ``--x/--no-x``."""
    parser = argparse.ArgumentParser(description=description)
    for item in dataclasses.fields(cls):
        flag = f"--{item.name.replace('_', '-')}"
        if isinstance(item.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=item.default,
                                help=item.metadata["help"])
        else:
            parser.add_argument(flag, type=type(item.default), default=item.default,
                                choices=item.metadata.get("choices"),
                                help=f"{item.metadata['help']} (default: {item.default})")
    return cls(**vars(parser.parse_args(argv)))


def seed_everything(seed: int, torch_threads: int) -> None:
    """One seeding block for python, numpy and torch."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(torch_threads)


__all__ = ["parse_dataclass_args", "seed_everything"]
