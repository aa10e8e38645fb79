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
from gymjax.core.errors import SimulationError, simulation_error

__all__ = ["AutoResetState", "Env", "EpisodeStatistics", "SimulationError", "State", "Wrapper", "check_agents",
           "field_names", "simulation_error", "where", "where_env", "with_fields"]
