"""Training settings as data: frozen dataclasses whose fields declare their help and range once.

``setting(default, help, low=..., high=..., choices=...)`` declares a field; ``check_settings``
is the one validator (a ``ValueError`` naming the first setting out of its range, as its flag);
``parse_settings`` builds the command line from the fields. A field whose default is itself a
settings dataclass (a stage's hyperparameters) is set from Python, not from the command line:
the flags are what a user of the command reaches for, the rest has its documented default.

``Command`` is the one command-line shape of the training stages (``python -m training.NAME``):
``parse_args``, ``main`` and ``cli`` with the same exit codes and stop messages everywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import random
import shlex
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from okgin_env.settings import in_range, of_kind, range_text
from okgin_env.settings import setting as declared
from okgin_env.signals import sigterm_raises

T = TypeVar("T")

#: The largest seed a training stage takes: python's, numpy's and torch's global seeding (one
#: ``seed_everything``) take seeds below 2**32.
MAX_SEED = 2**32 - 1


def setting(default: Any, help: str, *, low: float | None = None, high: float | None = None,
            above: float | None = None, choices: tuple = (), budget: bool = False,
            runtime: bool = False, env: str = "", absent: Any = dataclasses.MISSING) -> Any:  # noqa: A002
    """A settings field (``okgin_env.settings.setting``: its default, its help and its range,
    ``low``/``high`` inclusive, ``above`` exclusive, or one of ``choices``), declared once for the
    command line and the validator. ``budget``: how long the stage runs, which a resumed run may
    extend; ``runtime``: how it runs (processes, a cluster), not what it makes; a resume may change
    both (``training.manifest``). ``env``: the command line reads it from this environment
    variable instead of a flag (where the machine, not the run, decides it: a cluster's address).
    ``absent``: what a run recorded before the setting existed ran with, where that is not today's
    default (``training.manifest.with_defaults``)."""
    extra = {} if absent is dataclasses.MISSING else {"absent": absent}
    return declared(default, help, low=low, high=high, above=above, choices=choices, budget=budget, runtime=runtime,
                    env=env, **extra)


def flag_of(name: str) -> str:
    return f"--{name.replace('_', '-')}"


_KIND_WORDS = {bool: "True or False", int: "an integer", float: "a finite number", str: "text"}


def check_settings(settings: Any, prefix: str = "") -> None:
    """A ``ValueError`` naming the first field out of its declared range (types included: an int
    field takes an int, not a bool; a float field a finite number); nested settings are checked too.
    The range is ``okgin_env.settings``' check; the message names the command line's flag."""
    for item in dataclasses.fields(settings):
        value, meta = getattr(settings, item.name), item.metadata
        name = f"{prefix}{item.name}" if prefix else (meta.get("env") or flag_of(item.name))
        if item.default is dataclasses.MISSING:  # nested settings (set from Python)
            check_settings(value, prefix=f"{prefix}{item.name}.")
            continue
        if not of_kind(value, meta["kind"], numpy_scalars=False):  # (kept as given: a manifest writes it)
            raise ValueError(f"{name} must be {_KIND_WORDS.get(meta['kind'], meta['kind'].__name__)}, got {value!r}")
        if meta["choices"] and value not in meta["choices"]:
            raise ValueError(f"{name} {value!r}; allowed: {range_text(meta).removeprefix('one of ')}")
        if not in_range(value, meta):
            raise ValueError(f"{name} must be {range_text(meta)}, got {value}")


def plain_text(text: str) -> str:
    """A docstring's reStructuredText literals (````code````) as the plain text a terminal shows."""
    return text.replace("``", "")


def _from_environment(group: tuple) -> dict[str, dataclasses.Field]:
    return {item.name: item for cls in group for item in dataclasses.fields(cls) if item.metadata.get("env")}


def settings_parser(classes: Any, description: str, prog: str | None = None, **defaults: Any) -> argparse.ArgumentParser:
    """The parser of ``parse_settings``: a flag per plain field (``defaults`` replacing the
    fields' own), the fields read from the environment listed after the flags in ``--help``."""
    group = classes if isinstance(classes, tuple) else (classes,)
    from_environment = _from_environment(group)
    epilog = "environment: " + "; ".join(f"{item.metadata['env']}: {plain_text(item.metadata['help'])}"
                                         for item in from_environment.values()) if from_environment else None
    parser = argparse.ArgumentParser(prog=prog, description=plain_text(description), epilog=epilog)
    for cls in group:
        for item in dataclasses.fields(cls):
            if item.default is dataclasses.MISSING or item.name in from_environment:  # from Python / the environment
                continue
            default = defaults.get(item.name, item.default)
            if isinstance(item.default, bool):
                parser.add_argument(flag_of(item.name), action=argparse.BooleanOptionalAction, default=default,
                                    help=plain_text(item.metadata["help"]))
            else:
                shown = f"; {range_text(item.metadata)}" if range_text(item.metadata) else ""
                parser.add_argument(flag_of(item.name), type=type(item.default), default=default,
                                    help=f"{plain_text(item.metadata['help'])} (default: {default if default != '' else 'empty'}{shown})")
    return parser


def parse_settings(classes: Any, argv: list[str] | None, description: str, prog: str | None = None,
                   **defaults: Any) -> Any:
    """``--field-name VALUE`` for every plain field of ``classes`` (one settings dataclass or a
    tuple of them; booleans ``--x/--no-x``), a field declared with ``env`` from that environment
    variable instead; nested settings keep their defaults. ``defaults`` replace the fields' own
    (a preset's). Each result is checked with ``check_settings``; one instance per class comes
    back (a tuple for a tuple)."""
    group = classes if isinstance(classes, tuple) else (classes,)
    values = vars(settings_parser(classes, description, prog, **defaults).parse_args(argv))
    for name, item in _from_environment(group).items():
        values[name] = os.environ.get(item.metadata["env"], defaults.get(name, item.default))
    settings = []
    for cls in group:
        names = {item.name for item in dataclasses.fields(cls) if item.default is not dataclasses.MISSING}
        one = cls(**{name: values[name] for name in names})
        check_settings(one)
        settings.append(one)
    return tuple(settings) if isinstance(classes, tuple) else settings[0]


@dataclass(frozen=True)
class RunOptions:
    """Where a stage writes and how it shows itself: not part of what it trains (no manifest entry)."""

    run_dir: str = setting("runs/ppo", "the run's folder: checkpoints, labels, logs and summary")
    resume: bool = setting(False, "continue the run in --run-dir (refused if its settings differ)")


def command_line(prog: str, argv: list[str] | None, environment: dict[str, str] | None = None) -> str:
    """The command that started a run (``argv``, by default ``sys.argv[1:]``) without ``--resume``,
    after the ``environment`` settings it read (``NAME=VALUE``): with `` --resume`` added, how a
    stopped run is continued."""
    given = [a for a in (sys.argv[1:] if argv is None else argv) if a not in ("--resume", "--no-resume")]
    return shlex.join([*(f"{name}={value}" for name, value in (environment or {}).items()), *prog.split(), *given])


@dataclass(frozen=True)
class Command:
    """A training command: its settings class and ``RunOptions`` as flags, and its ``run(config,
    run_dir, *, resume, progress_bar[, command])``, which returns the run's summary (progress bars
    only when stderr is a terminal).

    ``cli`` exits 0 when the run finished; 2 with one line on bad input (a ``ValueError``, a
    missing file, or Ray missing for ``OKGIN_RAY_ADDRESS``); 128 + the signal's number when a signal
    stopped it (a summary whose ``stopped_by`` names it, or a ``KeyboardInterrupt``), printing the
    command that continues it. ``sigterm``: SIGTERM raises ``KeyboardInterrupt`` as Ctrl-C does
    (for commands with work outside the PPO loop, which handles its own signals);
    ``says_how_to_resume``: ``run`` takes ``command`` and prints the resume line itself;
    ``adjust(config, options)`` may change the options after parsing (returns them).
    """

    prog: str
    description: str | None  # the module docstring: its first line is the --help description
    settings: type
    run: Callable[..., Any]
    run_dir: str
    sigterm: bool = False
    says_how_to_resume: bool = False
    adjust: Callable[[Any, RunOptions], RunOptions] | None = None

    def _first_line(self) -> str:
        return (self.description or self.prog).strip().splitlines()[0]  # (None under python -OO)

    def parser(self) -> argparse.ArgumentParser:
        """The command's flags (``--help``)."""
        return settings_parser((self.settings, RunOptions), self._first_line(), prog=self.prog, run_dir=self.run_dir)

    def environment(self) -> dict[str, str]:
        """The settings this command reads from the environment that are set there (for the resume line)."""
        names = (item.metadata["env"] for item in _from_environment((self.settings,)).values())
        return {name: os.environ[name] for name in names if os.environ.get(name)}

    def parse_args(self, argv: list[str] | None = None) -> tuple[Any, RunOptions]:
        config, options = parse_settings((self.settings, RunOptions), argv, self._first_line(), prog=self.prog,
                                         run_dir=self.run_dir)
        return config, (self.adjust(config, options) if self.adjust else options)

    def main(self, argv: list[str] | None = None) -> Any:
        """The command as a function: the run's summary."""
        config, options = self.parse_args(argv)
        given = {"command": command_line(self.prog, argv, self.environment())} if self.says_how_to_resume else {}
        # Progress bars where a person watches (stderr a terminal), none in a log file or a pipe, as okgin-eval.
        return self.run(config, options.run_dir, resume=options.resume, progress_bar=sys.stderr.isatty(), **given)

    def cli(self, argv: list[str] | None = None) -> int:
        try:
            with sigterm_raises() if self.sigterm else contextlib.nullcontext():
                summary = self.main(argv)
        except (ValueError, FileNotFoundError, ImportError) as error:  # a CheckpointError is a ValueError
            print(f"{self.prog}: error: {error}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as stop:
            name = getattr(stop, "signal_name", "SIGINT")  # a plain KeyboardInterrupt: Ctrl-C
            print(f"{self.prog}: stopped by {name}; continue with: {command_line(self.prog, argv, self.environment())} "
                  "--resume",
                  file=sys.stderr)
            return 128 + signal.Signals[name].value
        stopped = summary.get("stopped_by") if isinstance(summary, dict) else None
        return 128 + signal.Signals[stopped].value if stopped else 0


def make_run_dir(path: str | Path, flag: str = "--run-dir") -> Path:
    """``path`` made a folder (with its parents); a ``ValueError`` in one line when it cannot be
    (a file in the way, no permission, a device), before anything else is written."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            raise NotADirectoryError(f"{path} is not a folder")
        probe = path / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise ValueError(f"{flag} {path}: cannot be used as the run folder "
                         f"({error.strerror or error}); give a folder that can be written") from None
    return path


def seed_everything(seed: int, torch_threads: int) -> None:
    """One seeding block for python, numpy and torch."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(torch_threads)


__all__ = ["MAX_SEED", "Command", "RunOptions", "check_settings", "command_line", "flag_of", "make_run_dir", "parse_settings", "seed_everything", "setting"]
