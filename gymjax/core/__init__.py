"""Functional env protocol: :class:`Env`, :class:`State`, :class:`Wrapper`."""

from gymjax.core.env import Env, State, Wrapper

__all__ = ["Env", "State", "Wrapper"]
