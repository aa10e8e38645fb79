"""Classic control in pure JAX."""

from gymjax.envs.classic.acrobot import Acrobot, AcrobotParams, AcrobotState
from gymjax.envs.classic.cartpole import CartPole, CartPoleParams, CartPoleState
from gymjax.envs.classic.mountain_car import MountainCar, MountainCarParams, MountainCarState
from gymjax.envs.classic.mountain_car_continuous import MountainCarContinuous, MountainCarContinuousParams
from gymjax.envs.classic.pendulum import Pendulum, PendulumParams, PendulumState
from gymjax.envs.classic.state import PhysicsState

__all__ = [
    "Acrobot",
    "AcrobotParams",
    "AcrobotState",
    "CartPole",
    "CartPoleParams",
    "CartPoleState",
    "MountainCar",
    "MountainCarContinuous",
    "MountainCarContinuousParams",
    "MountainCarParams",
    "MountainCarState",
    "Pendulum",
    "PendulumParams",
    "PendulumState",
    "PhysicsState",
]
