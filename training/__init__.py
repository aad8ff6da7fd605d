"""PyTorch training for okgin (imports okgin_env; okgin_env never imports this)."""


def load_policy(path, greedy=True, seed=None, threads=1):
    """A policy with ``act(observation) -> int`` from a checkpoint (see ``training.policy.load_policy``)."""
    from .policy import load_policy as _load

    return _load(path, greedy=greedy, seed=seed, threads=threads)
