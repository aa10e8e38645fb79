"""Classic control in pure JAX."""

from gymjax.envs.classic.cartpole import CartPole, CartPoleParams
from gymjax.envs.classic.pendulum import Pendulum, PendulumParams

__all__ = ["CartPole", "CartPoleParams", "Pendulum", "PendulumParams"]
