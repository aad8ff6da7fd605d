"""The Ray path of ``training.workers.run_jobs`` on a real two-node Ray cluster (integration stage).

The fixture starts a head and a worker node with the ``ray`` CLI on loopback, each with one CPU,
its own ports and its own temporary directory (so that it cannot meet any other Ray on this
machine), token authentication off (``RAY_AUTH_MODE=disabled``: a private test cluster). It is
stopped by the ids of the processes it started (``ray stop`` would stop every Ray on the machine).

Run: ``RAY_AUTH_MODE=disabled python -m pytest -m integration tests/test_ray_cluster.py``
(needs the ``rllib`` extra, for Ray; skipped without it).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.integration
ray = pytest.importorskip("ray")
import training.improve as improve  # noqa: E402
from training.labelling import label_decisions  # noqa: E402
from training.policy import CheckpointError  # noqa: E402
from training.workers import run_jobs  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CHECKPOINT = REPO / "checkpoints" / "okgin_classic_ppo.pt"
RAY_CLI = Path(sys.executable).with_name("ray")
CLUSTER_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


#: Every port handed to a node in this session (components and worker ranges): a probed port is
#: free again once probed, and Ray refuses a node whose ports overlap (seen: a worker range over
#: the object manager's port), so none is handed out twice.
_HANDED_OUT: set[int] = set()


def _free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT and port not in ports:
            ports.append(port)
    _HANDED_OUT.update(ports)
    return ports


def _free_port_range(size: int) -> int:
    """The first port of ``size`` consecutive free ports not handed out before (one node's workers)."""
    for _ in range(200):
        first = random.randrange(20_000, 60_000 - size)
        if _HANDED_OUT & set(range(first, first + size)):
            continue
        try:
            held = []
            for port in range(first, first + size):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", port))
            _HANDED_OUT.update(range(first, first + size))
            return first
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError("no free port range")


def _node_command(temp_dir: Path, head_port: int, head: bool) -> list[str]:
    ports = _free_ports(8)
    first_worker_port = _free_port_range(40)
    command = [str(RAY_CLI), "start", "--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--num-gpus=0",
               "--object-store-memory=100000000", f"--temp-dir={temp_dir}", "--disable-usage-stats",
               f"--node-manager-port={ports[0]}", f"--object-manager-port={ports[1]}",
               f"--runtime-env-agent-port={ports[2]}", f"--dashboard-agent-grpc-port={ports[3]}",
               f"--dashboard-agent-listen-port={ports[4]}", f"--metrics-export-port={ports[5]}",
               f"--min-worker-port={first_worker_port}", f"--max-worker-port={first_worker_port + 39}"]
    if head:
        # Ray still runs a headless dashboard process: its port too, not the default 8265.
        return [*command, "--head", f"--port={head_port}", "--include-dashboard=false",
                f"--ray-client-server-port={ports[6]}", f"--dashboard-port={ports[7]}"]
    return [*command, f"--address=127.0.0.1:{head_port}"]


def _wait_for_line(log: Path, process: subprocess.Popen, text: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise RuntimeError(f"ray node did not start ({log}):\n{log.read_text(errors='replace')[-3000:]}")


def _descendants(pids: list[int]) -> set[int]:
    """Every process below ``pids`` (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, rest = stat.read_text().split(" (", 1)
            children.setdefault(int(rest.rsplit(") ", 1)[1].split()[1]), []).append(int(pid))
        except (OSError, IndexError, ValueError):
            continue  # a process that ended meanwhile
    found, todo = set(), list(pids)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _stop(processes: list[subprocess.Popen]) -> None:
    """SIGTERM each ``ray start --block`` (it stops its node), then SIGKILL whatever it left behind:
    by process id, and by the process group (session) each node was started in."""
    leftovers = _descendants([process.pid for process in processes])
    for process in reversed(processes):  # the worker node first
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    time.sleep(1)
    for pid in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for process in processes:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # its own session: start_new_session=True
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def cluster_address():
    """A running head plus one worker node on 127.0.0.1; yields the head's address."""
    saved = {name: os.environ.get(name) for name in CLUSTER_ENV}
    os.environ.update(CLUSTER_ENV)  # the driver (this process) must match the cluster's auth mode
    root = Path(tempfile.mkdtemp(prefix="okgin-ray-"))  # short: Ray's socket paths have a length limit
    head_port = _free_ports(1)[0]
    processes: list[subprocess.Popen] = []
    try:
        for name, head in (("head", True), ("worker", False)):
            log = root / f"{name}.log"
            with log.open("w") as out:
                processes.append(subprocess.Popen(_node_command(root / name, head_port, head), stdout=out,
                                                  stderr=subprocess.STDOUT, env={**os.environ, **CLUSTER_ENV},
                                                  cwd=root, start_new_session=True))
            _wait_for_line(log, processes[-1], "Ray runtime started")
        yield f"127.0.0.1:{head_port}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _stop(processes)
        shutil.rmtree(root, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def label_where(job):
    """``training.labelling.label_decisions(job)`` plus where it ran: the node's id and the packages shipped to
    it ({name: source of its labelling.py or __init__.py}, from the Ray runtime_env folders on sys.path;
    a node of this machine also sees the driver's sys.path, a node elsewhere only these)."""
    shipped = {}
    for entry in sys.path:
        for name, file in (("okgin_env", "__init__.py"), ("training", "labelling.py")):
            path = Path(entry) / name / file
            if "runtime_resources" in entry and path.is_file():
                shipped[name] = path.read_bytes()
    return ray.get_runtime_context().get_node_id(), label_decisions(job), shipped


def _alive_nodes(address: str, want: int, timeout: float = 60.0) -> list[dict]:
    ray.init(address=address, logging_level="WARNING")
    try:
        deadline = time.monotonic() + timeout
        while True:
            nodes = [node for node in ray.nodes() if node["Alive"]]
            if len(nodes) >= want or time.monotonic() > deadline:
                return nodes
            time.sleep(0.5)
    finally:
        ray.shutdown()


def test_jobs_run_on_both_nodes_and_give_the_local_labels(cluster_address: str):
    nodes = _alive_nodes(cluster_address, want=2)
    assert len(nodes) == 2 and all(node["Resources"]["CPU"] == 1 for node in nodes)

    # The test module's function goes by value (the workers do not have tests/); labelling comes
    # from the package the driver ships.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    jobs = [(str(CHECKPOINT), "classic", 300 + k, 3) for k in range(4)]
    on_ray = list(run_jobs(label_where, jobs, workers=2, ray_address=cluster_address, progress=False))
    assert not ray.is_initialized()  # run_jobs connected, and disconnected at the end
    local = list(run_jobs(label_decisions, jobs, workers=2, progress=False))

    assert {node_id for node_id, _, _ in on_ray} == {node["NodeID"] for node in nodes}  # both nodes worked
    for (_, labels, shipped), expected in zip(on_ray, local, strict=True):  # in job order, identical
        assert shipped == {"okgin_env": (REPO / "okgin_env" / "__init__.py").read_bytes(),
                           "training": (REPO / "training" / "labelling.py").read_bytes()}
        assert labels.keys() == expected.keys() and labels["q"].shape[0] == 3
        for key in expected:
            assert labels[key].dtype == expected[key].dtype and np.array_equal(labels[key], expected[key]), key
    assert not np.array_equal(on_ray[0][1]["q"], on_ray[1][1]["q"])  # different seeds, different labels

    # A job's exception comes back as an instance of its own class.
    with pytest.raises(CheckpointError, match="does not exist"):
        list(run_jobs(label_decisions, [(str(CHECKPOINT) + ".missing", "classic", 1, 2)], workers=1,
                      ray_address=cluster_address, progress=False))
    assert not ray.is_initialized()


def test_improve_with_ray_address_writes_the_local_label_files(cluster_address: str, tmp_path: Path):
    import dataclasses

    config = improve.ImproveConfig(init_from=str(CHECKPOINT), decisions=8, workers=2, eval_matches=0,
                                   fit=improve.FitSettings(chunk=4, epochs=0))
    improve.run(dataclasses.replace(config, ray_address=cluster_address), tmp_path / "ray", progress_bar=False)
    improve.run(config, tmp_path / "local", progress_bar=False)
    names = sorted(path.name for path in (tmp_path / "ray").glob("labels_*.npz"))
    assert names == ["labels_0000.npz", "labels_0001.npz"]
    for name in names:
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
