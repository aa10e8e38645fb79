"""Functional env protocol: :class:`Env`, :class:`State`, :class:`Wrapper`."""

from gymjax.core.env import (
    AutoResetState,
    Env,
    EpisodeStatistics,
    State,
    Wrapper,
    check_agents,
    field_names,
    where,
    where_env,
    with_fields,
)

__all__ = ["AutoResetState", "Env", "EpisodeStatistics", "State", "Wrapper", "check_agents", "field_names", "where",
           "where_env", "with_fields"]
