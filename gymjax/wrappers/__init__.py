"""Wrappers: pure-JAX env transforms (:mod:`.training`) and adapters to other
frameworks (:mod:`.gymnasium`), whose settings are one :class:`SessionOptions`.

The torch and Stable-Baselines3 adapters need optional packages (extras ``torch``
and ``sb3``), so they are not imported here: import them by name,
``from gymjax.wrappers.torch import TorchVectorEnv`` and
``from gymjax.wrappers.sb3 import SB3VecEnv``. ``import gymjax`` imports neither
torch nor stable_baselines3.
"""

from gymjax.wrappers.options import SessionOptions
from gymjax.wrappers.training import (
    ActionRepeat,
    AutoReset,
    AutoResetMode,
    BraxRandomization,
    DomainRandomization,
    EpisodeWrapper,
    VmapWrapper,
    make_eval_env,
    next_reset_key,
    wrap_for_training,
)

__all__ = [
    "ActionRepeat",
    "AutoReset",
    "AutoResetMode",
    "BraxRandomization",
    "DomainRandomization",
    "EpisodeWrapper",
    "SessionOptions",
    "VmapWrapper",
    "make_eval_env",
    "next_reset_key",
    "wrap_for_training",
]
