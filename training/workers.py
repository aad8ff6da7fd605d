"""Run independent jobs in local worker processes or on a Ray cluster, through one code path.

``run_jobs(function, jobs, workers=N)`` calls ``function(job)`` for every job and yields the
results **in job order**, with a progress bar:

    from training.workers import run_jobs

    for k, labels in enumerate(run_jobs(label_decisions, jobs, workers=2, desc="labelling")):
        np.savez_compressed(run_dir / f"labels_{k:04d}.npz", **labels)

Where the jobs run is the only thing ``ray_address`` changes; the jobs, the function and the
results are the same either way (a job that seeds itself gives the same result on a laptop and
on a cluster):

- ``ray_address=None`` (default): ``workers`` local processes (``multiprocessing`` with the
  ``spawn`` start method, so that each worker starts clean: no inherited torch threads or
  random state). Ray is not imported. A worker ends itself within a second or two of its
  driver's death, even a ``kill -9``.
- ``ray_address="HOST:PORT"`` (a cluster started with ``ray start --head``), ``"auto"`` (the
  cluster this machine belongs to) or ``"ray://HOST:10001"`` (Ray Client): every job becomes one
  Ray task needing one CPU, all are submitted at once and Ray runs as many at a time as the
  cluster has CPUs (``workers`` is not used); the scheduling strategy is ``"SPREAD"``, so that
  jobs go to every node rather than filling the head first.
- ``ray_address="local"``: a private Ray instance on this machine with ``workers`` CPUs (to try
  the Ray path without a cluster).

Rules for jobs, both paths:

- ``function`` must be a module-level function (pickled by reference) of ``okgin_env`` or of this
  training package, or of a module installed on every node; jobs and results must pickle.
- A job **returns** its data: on a cluster the worker's disk is not the driver's, so a job that
  writes files leaves them on some other machine. The driver writes what comes back.
- An exception in a job is raised by the iterator (on Ray, as a ``RayTaskError`` that is also an
  instance of the job's exception class, with the remote traceback); the remaining jobs are
  cancelled.

On Ray, the driver ships the local ``okgin_env`` and training packages to the workers (Ray
runtime_env ``py_modules``), so the nodes need only the dependencies (for this package: the
``rllib`` extra's Ray, torch and gymnasium pins, numpy, pettingzoo, tqdm), not a copy of the
code. ``run_jobs`` connects (or starts the local instance) and disconnects when the iterator is
exhausted or closed. If Ray is already initialised in this process, that connection is used and
left open, and nothing is shipped (Ray uploads local code only at ``ray.init``): the caller's
``ray.init`` must then ship the packages itself, or the nodes must have them installed. Ray 2.60 clusters use
token authentication by default: give the driver the cluster's token (``RAY_AUTH_TOKEN`` or
``~/.ray/auth_token``), or start a private test cluster with ``RAY_AUTH_MODE=disabled``.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import pickle
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from tqdm import tqdm

from okgin_env.rules.config import is_int

from .cli import setting

Job = TypeVar("Job")
Result = TypeVar("Result")

LOCAL_RAY = "local"
"""``ray_address`` that starts a private Ray instance on this machine (with ``workers`` CPUs)."""

RAY_ADDRESS_VARIABLE = "OKGIN_RAY_ADDRESS"
"""The environment variable the labelling stages' command lines read ``ray_address`` from (as
``examples/rllib_selfplay.py``): where the jobs run is the machine's business, not the run's."""


def ray_address_setting() -> Any:
    """The ``ray_address`` field of every stage that labels (``training.improve``, ``pipeline``)."""
    return setting("", "label on a Ray cluster at this address (HOST:PORT, auto, or local for a private instance "
                   "with --workers CPUs; see training.workers); empty: local processes. Same jobs, same labels",
                   runtime=True, env=RAY_ADDRESS_VARIABLE)


RAY_EXTRA = "rllib"
"""The extra of this project that installs Ray (``pip install "okgin[rllib]"``, or ``-e ".[rllib]"``)."""

# The packages a job's code lives in: shipped to Ray workers by the driver.
_SHIPPED_PACKAGES = ("okgin_env", __package__ or "training")


def require_ray(ray_address: str | None = None):
    """The ``ray`` module; ``ImportError`` naming the extra to install if Ray is missing.

    ``ray_address`` (optional) only names what asked for Ray in the message. Call it early (before
    any work) to refuse a Ray address on a machine without Ray.
    """
    try:
        import ray
    except ImportError as error:
        asked = (f"ray_address={ray_address!r} (on a command line: {RAY_ADDRESS_VARIABLE}) needs" if ray_address
                 else "running jobs on Ray needs")
        raise ImportError(f"{asked} Ray, which is not installed: pip install \"okgin[{RAY_EXTRA}]\" "
                          f"(in a checkout: pip install -e \".[{RAY_EXTRA}]\"), or run without a Ray "
                          f"address (unset {RAY_ADDRESS_VARIABLE}) to use local worker processes") from error
    return ray


def run_jobs(function: Callable[[Job], Result], jobs: Iterable[Job], *, workers: int,
             ray_address: str | None = None, progress: bool = True, desc: str = "") -> Iterator[Result]:
    """``function(job)`` for every job, locally or on Ray; an iterator of the results in job order.

    ``workers``: local processes (at most one per job), or the CPUs of the ``"local"`` Ray
    instance; ``ray_address``: ``None`` for local processes, else a Ray address (see the module
    docstring); ``progress``/``desc``: a tqdm bar over the jobs. The arguments are checked at the
    call (``ValueError``/``ImportError`` before any job starts); the jobs start when the iterator
    is first advanced. Consume the iterator or ``close()`` it: that stops the workers.
    """
    if not callable(function):
        raise ValueError(f"function must be callable, got {function!r}")
    try:
        pickle.dumps(function)
    except Exception as error:
        raise ValueError(f"function must be a module-level function (it is sent to worker processes by "
                         f"reference), got {function!r}: {error}") from None
    if isinstance(jobs, (str, bytes)) or not isinstance(jobs, Iterable):
        raise ValueError(f"jobs must be an iterable of job arguments (e.g. a list of tuples), got {jobs!r}")
    jobs = list(jobs)
    if not is_int(workers) or workers < 1:
        raise ValueError(f"workers must be an integer of at least 1, got {workers!r}")
    if ray_address is not None and (not isinstance(ray_address, str) or not ray_address.strip()):
        raise ValueError(f"ray_address must be None (local worker processes), {LOCAL_RAY!r}, 'auto' or a "
                         f"cluster address such as '10.0.0.1:6379', got {ray_address!r}")
    if ray_address is None:
        return _run_locally(function, jobs, workers, progress, desc)
    ray = require_ray(ray_address)
    return _run_on_ray(ray, function, jobs, workers, ray_address.strip(), progress, desc)


def exit_with_parent(parent: int) -> None:
    """In a worker process: end it once its driver (process ``parent``) is gone. A driver killed by
    a signal never runs its cleanup, and its workers would otherwise go on working for nobody."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="okgin-parent-watch").start()


def _run_locally(function, jobs: list, workers: int, progress: bool, desc: str) -> Iterator:
    if not jobs:
        return
    with tqdm(total=len(jobs), disable=not progress, desc=desc) as bar, \
            mp.get_context("spawn").Pool(min(workers, len(jobs)), initializer=exit_with_parent,
                                         initargs=(os.getpid(),)) as pool:
        for result in pool.imap(function, jobs):
            bar.update()
            yield result


def _run_on_ray(ray, function, jobs: list, workers: int, address: str, progress: bool, desc: str) -> Iterator:
    if not jobs:
        return
    connected_here = not ray.is_initialized()
    with tempfile.TemporaryDirectory(prefix="okgin-ray-modules-") as staging:
        if connected_here:
            # Ray uploads local packages only for a job-level runtime_env (the one given to ray.init).
            options: dict[str, Any] = {
                "address": address, "logging_level": "WARNING",
                "runtime_env": {"py_modules": _package_directories(Path(staging)), "excludes": ["__pycache__", "*.pyc"]}}
            if address == LOCAL_RAY:
                options.update(num_cpus=workers, include_dashboard=False)
            ray.init(**options)
        pending: list = []
        try:
            task = ray.remote(function).options(num_cpus=1, scheduling_strategy="SPREAD")
            if progress:
                nodes = [node for node in ray.nodes() if node.get("Alive")]
                cpus = sum(node.get("Resources", {}).get("CPU", 0) for node in nodes)
                print(f"ray ({address}): {len(jobs)} jobs, {len(nodes)} node(s) with {cpus:g} CPUs", file=sys.stderr)
            # Only the pending references are kept: Ray frees each result once it is fetched.
            index_of = {task.remote(job): k for k, job in enumerate(jobs)}
            pending = list(index_of)
            finished: dict[int, Any] = {}
            next_index = 0
            with tqdm(total=len(jobs), disable=not progress, desc=desc) as bar:
                while next_index < len(jobs):
                    ready, pending = ray.wait(pending, num_returns=1)
                    for ref in ready:
                        finished[index_of.pop(ref)] = ray.get(ref)
                        bar.update()
                    while next_index in finished:
                        yield finished.pop(next_index)
                        next_index += 1
        finally:
            for ref in pending:  # after an error or an early close
                ray.cancel(ref)
            if connected_here:
                ray.shutdown()


def _package_directories(staging: Path) -> list[str]:
    """The shipped packages' directories, each named as it is imported (a copy where the folder's
    name differs, e.g. the installed ``okgin_training`` whose folder is ``training/``)."""
    directories = []
    for name in dict.fromkeys(_SHIPPED_PACKAGES):
        folder = Path(importlib.import_module(name).__file__).resolve().parent
        if folder.name != name:
            folder = Path(shutil.copytree(folder, staging / name, ignore=shutil.ignore_patterns("__pycache__")))
        directories.append(str(folder))
    return directories


__all__ = ["LOCAL_RAY", "RAY_EXTRA", "require_ray", "run_jobs"]
