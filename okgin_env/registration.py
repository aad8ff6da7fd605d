"""The environment ids: ``OklahomaGin-v0`` (Gymnasium) and ``okgin/oklahoma_gin_v0`` (PettingZoo).

``register_envs()`` registers both (it imports gymnasium and pettingzoo; calling it again does
nothing). It runs when an environment module (``okgin_env.env`` and the modules built on it) is
imported, and at ``import okgin_env`` when gymnasium is already imported (so that importing the
rules alone loads no RL library). Hence::

    import gymnasium, okgin_env            # gymnasium first, as imports are usually sorted
    gymnasium.make("OklahomaGin-v0")

    import okgin_env, pettingzoo           # okgin_env first: register explicitly
    okgin_env.register_envs()
    pettingzoo.make("aec", "okgin/oklahoma_gin_v0")

and, with no import of okgin_env at all, ``gymnasium.make("okgin_env.gym_env:OklahomaGin-v0")``
(Gymnasium imports the module named before the colon, which registers the ids).
"""

from __future__ import annotations

GYMNASIUM_ID = "OklahomaGin-v0"
PETTINGZOO_ID = "okgin/oklahoma_gin_v0"
PETTINGZOO_ENTRY_POINT = "okgin_env.env:env"


def register_envs() -> None:
    """Register ``OklahomaGin-v0`` with Gymnasium and ``okgin/oklahoma_gin_v0`` with PettingZoo."""
    from gymnasium.envs.registration import register, registry

    if GYMNASIUM_ID not in registry:
        register(
            GYMNASIUM_ID,
            entry_point="okgin_env.gym_env:GymEnv",
            vector_entry_point="okgin_env.vector:VectorGymEnv",
        )
    import pettingzoo

    # PettingZoo keys its registry by a normalised id ("..._v0" becomes "...-v0"): look for the entry point.
    if not any(spec.entry_point == PETTINGZOO_ENTRY_POINT for spec in pettingzoo.aec_registry.values()):
        pettingzoo.register("aec", PETTINGZOO_ID, entry_point=PETTINGZOO_ENTRY_POINT)
