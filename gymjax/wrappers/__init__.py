"""Wrappers: pure-JAX env transforms (:mod:`.training`) and adapters to other
frameworks (:mod:`.gymnasium`)."""

from gymjax.wrappers.training import (
    ActionRepeat,
    AutoReset,
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
    "DomainRandomization",
    "EpisodeWrapper",
    "VmapWrapper",
    "make_eval_env",
    "next_reset_key",
    "wrap_for_training",
]
