"""PyTorch training for okgin, on top of okgin_env (okgin_env never imports this package).

In a checkout this folder is the package ``training`` (``python -m training.train``); installed,
it is ``okgin_training``. Importing it registers ``load_policy`` as okgin_env's reader of ``.pt``
policy files, so ``okgin_env.evaluate``, ``okgin-eval`` and ``okgin-play`` accept checkpoint paths
(an installed okgin also declares it as the entry point ``pt`` of ``okgin.policy_loaders``).
"""


def load_policy(path, greedy=True, seed=None, threads=1, *, rules="classic", num_players=None, suit_symmetric=None):
    """A policy with ``act(observation) -> int`` from a checkpoint (see ``policy.load_policy``):
    a path, or a shipped policy by name, ``load_policy("pretrained:classic")``.

    ``rules`` (a preset name or a ``RulesConfig``) and ``num_players``: what it will play
    (default: classic, two players); a file trained for anything else raises ``CheckpointError``.
    ``suit_symmetric``: average each decision over the renamings of the suits (``None``: as the
    file's metadata says).
    """
    from .policy import load_policy as _load  # torch only when a checkpoint is read

    return _load(path, greedy=greedy, seed=seed, threads=threads, rules=rules, num_players=num_players,
                 suit_symmetric=suit_symmetric)


#: The settings a policy-file spec may give this loader (``checkpoints/okgin_classic.pt:suit_symmetric=False``).
load_policy.spec_settings = ("suit_symmetric",)


def _register_with_okgin_env() -> None:
    try:
        from okgin_env.evaluate import register_policy_loader
    except ImportError:  # an okgin_env without the registry: checkpoints are loaded directly only
        return
    register_policy_loader(".pt", load_policy)


_register_with_okgin_env()
