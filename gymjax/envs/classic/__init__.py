"""Classic control in pure JAX."""

from gymjax.envs.classic.acrobot import Acrobot, AcrobotParams
from gymjax.envs.classic.cartpole import CartPole, CartPoleParams
from gymjax.envs.classic.mountain_car import MountainCar, MountainCarParams
from gymjax.envs.classic.mountain_car_continuous import MountainCarContinuous, MountainCarContinuousParams
from gymjax.envs.classic.pendulum import Pendulum, PendulumParams

__all__ = [
    "Acrobot",
    "AcrobotParams",
    "CartPole",
    "CartPoleParams",
    "MountainCar",
    "MountainCarContinuous",
    "MountainCarContinuousParams",
    "MountainCarParams",
    "Pendulum",
    "PendulumParams",
]
