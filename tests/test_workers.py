"""``training.workers.run_jobs``, local path (the Ray path: tests/test_ray_cluster.py, integration)."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from training import workers
from training.workers import run_jobs

HAS_RAY = importlib.util.find_spec("ray") is not None


def slow_identity(job: tuple[int, float]) -> int:
    value, delay = job
    time.sleep(delay)
    return value


def fail_on_three(value: int) -> int:
    if value == 3:
        raise ValueError(f"bad job {value}")
    return value * 10


def test_results_come_in_job_order_whatever_order_the_jobs_finish_in():
    ray_was_imported = "ray" in sys.modules
    jobs = [(0, 0.6), (1, 0.0), (2, 0.3), (3, 0.0)]  # the first finishes last
    results = run_jobs(slow_identity, jobs, workers=2, progress=False)
    assert not isinstance(results, list)  # an iterator: the driver can save each result as it comes
    assert list(results) == [0, 1, 2, 3]
    assert ray_was_imported or "ray" not in sys.modules  # the local path never imports Ray
    assert list(run_jobs(slow_identity, [], workers=2, progress=False)) == []
    assert list(run_jobs(fail_on_three, iter([1, 2]), workers=5, progress=False)) == [10, 20]  # any iterable


def test_an_exception_in_a_job_is_raised_by_the_iterator():
    results = run_jobs(fail_on_three, [1, 2, 3, 4], workers=2, progress=False)
    assert next(results) == 10
    with pytest.raises(ValueError, match="bad job 3"):
        list(results)


def test_closing_the_iterator_early_stops_the_workers():
    results = run_jobs(slow_identity, [(0, 0.0), (1, 5.0), (2, 5.0)], workers=2, progress=False)
    began = time.monotonic()
    assert next(results) == 0
    results.close()  # terminates the pool instead of waiting for the 5 s jobs
    assert time.monotonic() - began < 4


@pytest.mark.parametrize("function, jobs, options, message", [
    (slow_identity, [(1, 0)], {"workers": 0}, "workers must be an integer of at least 1, got 0"),
    (slow_identity, [(1, 0)], {"workers": True}, "workers must be an integer"),
    (slow_identity, [(1, 0)], {"workers": 1.5}, "workers must be an integer"),
    (lambda job: job, [1], {"workers": 1}, "module-level function"),
    ("slow_identity", [1], {"workers": 1}, "function must be callable"),
    (slow_identity, 5, {"workers": 1}, "jobs must be an iterable"),
    (slow_identity, "ab", {"workers": 1}, "jobs must be an iterable"),
    (slow_identity, [(1, 0)], {"workers": 1, "ray_address": ""}, "ray_address must be None"),
    (slow_identity, [(1, 0)], {"workers": 1, "ray_address": 6379}, "ray_address must be None"),
])
def test_bad_arguments_are_refused_at_the_call(function, jobs, options, message):
    with pytest.raises(ValueError, match=message):
        run_jobs(function, jobs, progress=False, **options)  # raised before the iterator is advanced


@pytest.mark.skipif(HAS_RAY, reason="checks the message given where Ray is not installed")
def test_a_ray_address_without_ray_names_the_extra_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(ImportError, match=r'ray_address=.local. \(on a command line: OKGIN_RAY_ADDRESS\) needs Ray.*pip install "okgin\[rllib\]"'):
        run_jobs(slow_identity, [(1, 0)], workers=1, ray_address="local")
    from training.improve import main as improve_main

    with pytest.raises(ImportError, match=r"okgin\[rllib\]"):
        monkeypatch.setenv("OKGIN_RAY_ADDRESS", "10.0.0.1:6379")
        improve_main(["--run-dir", str(tmp_path / "never")])
    assert not (tmp_path / "never").exists()  # refused before anything was written


def test_shipped_packages_are_named_as_they_are_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # Installed, the training folder is the package okgin_training: Ray workers must find it by that name.
    pytest.importorskip("okgin_training")
    monkeypatch.setattr(workers, "_SHIPPED_PACKAGES", ("okgin_env", "okgin_training", "training"))
    directories = [Path(d) for d in workers._package_directories(tmp_path)]
    assert [d.name for d in directories] == ["okgin_env", "okgin_training", "training"]
    assert (directories[0] / "rules").is_dir() and (directories[2] / "improve.py").is_file()
    assert directories[1].parent == tmp_path  # a copy, since the folder itself is called training/
    assert (directories[1] / "improve.py").read_bytes() == (directories[2] / "improve.py").read_bytes()
    assert not list(directories[1].rglob("__pycache__"))


def write_pid_and_sleep(folder: str) -> int:
    """A job that says which process runs it, then outlives any test's patience."""
    Path(folder, f"{os.getpid()}.pid").touch()
    time.sleep(120)
    return os.getpid()


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (an orphan's zombie may wait for a reaper)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_local_workers_end_when_their_driver_is_killed(tmp_path: Path):
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import sys\n"
        f"sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]\n"
        "from test_workers import write_pid_and_sleep\n"
        "from training.workers import run_jobs\n"
        "if __name__ == '__main__':\n"
        f"    list(run_jobs(write_pid_and_sleep, [{str(tmp_path)!r}] * 2, workers=2, progress=False))\n")
    process = subprocess.Popen([sys.executable, str(driver)])
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
        pids = [int(path.stem) for path in tmp_path.glob("*.pid")]
        assert len(pids) == 2, "the two workers did not start"
        process.send_signal(signal.SIGKILL)  # no cleanup runs in the driver
        process.wait()
        deadline = time.monotonic() + 15
        while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_running(pid) for pid in pids), "a worker outlived its driver"
    finally:
        process.kill()
        for path in tmp_path.glob("*.pid"):
            if _running(int(path.stem)):
                os.kill(int(path.stem), signal.SIGKILL)
