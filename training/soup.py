"""Average the weights of policy files that share one network (a "model soup").

    python -m training.soup --out runs/soup.pt runs/a/fitted.pt runs/b/fitted.pt runs/c/fitted.pt

Improvement steps (``training.improve``) from one start, or a chain of them, move the weights a
little each; their uniform average keeps what the fits agree on and averages out part of what
each one learned from its own labels' noise. It is a plain mean of every tensor.

Every input is read with ``training.policy.load_checkpoint`` (``weights_only=True``, validated:
exactly the network's dense float32 CPU tensors, of the shapes its metadata gives), and all must
be made for the same table (rules preset and player count) with the same network (the same
observation size, hidden width and outlook inputs, hence the same tensors and shapes); a mismatch is an error that names the two files and what differs, and nothing is written. Each file is given once: two inputs with the same bytes
(a repeat, or a copy) are refused, since the average is uniform. The output is written
atomically (an existing ``--out`` is replaced; it may be one of the inputs, which are all read
first), loads with ``training.load_policy`` like any policy file, and keeps the first input's
metadata, with ``averaged_from`` added: each input's path and the sha256 of its bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import torch

from okgin_env.output_folder import prepare_output_folder

from .policy import ABSENT_METADATA, CheckpointError, load_checkpoint, write_checkpoint

PROG = "python -m training.soup"
#: Metadata that must agree for two files to share one table and one network (``load_checkpoint``
#: checks each file's tensors against the shapes the last four give).
SAME_METADATA = ("rules", "num_players", "observation_size", "hidden", "outlook_features", "network")


def average_checkpoints(paths: list[str | Path]) -> dict[str, Any]:
    """The payload of the uniform weight average of the policy files ``paths`` (two or more)."""
    if len(paths) < 2:
        raise ValueError(f"give at least two policy files to average, got {len(paths)}")
    payloads = [load_checkpoint(path) for path in paths]
    digests = [hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in paths]
    for index, digest in enumerate(digests):
        if digest in digests[:index]:  # a repeat would weigh one file twice in a "uniform" average
            raise ValueError(f"{paths[index]} holds the same bytes as {paths[digests.index(digest)]}: give each "
                             "policy file once")
    first, first_path = payloads[0], paths[0]
    for path, payload in zip(paths[1:], payloads[1:]):
        for key in SAME_METADATA:
            default = ABSENT_METADATA.get(key)  # (a file made before an option compares as what it holds)
            mine, theirs = first["metadata"].get(key, default), payload["metadata"].get(key, default)
            if mine != theirs:
                raise ValueError(f"{path} has {key} {theirs!r}, {first_path} has {mine!r}: only files of one "
                                 "table and one network can be averaged")
    model = {name: torch.stack([payload["model"][name] for payload in payloads]).mean(dim=0)
             for name in first["model"]}
    sources = [{"path": str(path), "sha256": digest} for path, digest in zip(paths, digests)]
    return {"format": first["format"], "model": model, "metadata": {**first["metadata"], "averaged_from": sources}}


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the averaged policy file to write (.pt)")
    parser.add_argument("inputs", nargs="+", help="two or more policy files of one table and one network")
    args = parser.parse_args(argv)
    if not args.out.endswith(".pt"):
        raise ValueError(f"--out {args.out!r}: a policy file's name ends in .pt")
    if os.path.lexists(args.out) and not os.path.isfile(args.out):
        what = "a folder" if os.path.isdir(args.out) else "a link to nothing" if not os.path.exists(args.out) \
            else "not a regular file"
        raise ValueError(f"--out {args.out!r} is {what}; give a policy file's path (ending in .pt)")
    payload = average_checkpoints(args.inputs)
    # Probed once the inputs are known good, so that bad inputs create no folder.
    prepare_output_folder(os.path.dirname(args.out) or ".", f"cannot write --out {args.out!r}")
    try:
        write_checkpoint(args.out, payload)
    except OSError as error:  # e.g. the disk is full: nothing is left at --out (the write is atomic)
        raise ValueError(f"cannot write --out {args.out!r}: {error.strerror or error}") from None
    load_checkpoint(args.out)  # what was written reads back and validates
    print(f"wrote {args.out}: the average of {len(args.inputs)} files")
    return Path(args.out)


def cli(argv: list[str] | None = None) -> int:
    """``python -m training.soup``: exit 2 with a message on bad input (nothing written)."""
    try:
        main(argv)
    except (ValueError, CheckpointError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(cli())
