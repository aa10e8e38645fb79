"""The JAX env collections users already have, through gymjax's runtime: Brax, MuJoCo Playground
and gymnax.

``gymjax.envs.from_brax``, ``from_playground`` and ``from_gymnax`` turn one of their envs into a
gymjax :class:`~gymjax.core.Env`; every id below is registered (with gymjax and Gymnasium) as
``<collection>/<name>-v<version>``, so clients that take only a string build them too::

    gymnasium.make("brax/halfcheetah-v0", backend="positional")
    gymnasium.make_vec("playground/CartpoleBalance-v0", num_envs=64)
    gymnasium.make("gymnax/Breakout-MinAtar-v0")

The names are listed here, so that registering them imports none of the packages (each is an
optional extra: ``gymjax[brax]``, ``gymjax[playground]``, ``gymjax[gymnax]``); a test holds each
list to the installed package's own registry. Their versions are the package's (``-v0`` where a
name has none; gymnax's ``CartPole-v1`` keeps its ``-v1``).
"""

from __future__ import annotations

import importlib
import re
from typing import Any

BRAX = (
    "ant", "halfcheetah", "hopper", "humanoid", "humanoidstandup", "inverted_double_pendulum",
    "inverted_pendulum", "pusher", "reacher", "swimmer", "walker2d",
)  # brax.envs' registry, less "fast" (a stub for Brax's own tests)
PLAYGROUND = (
    # DM Control suite
    "AcrobotSwingup", "AcrobotSwingupSparse", "BallInCup", "CartpoleBalance", "CartpoleBalanceSparse",
    "CartpoleSwingup", "CartpoleSwingupSparse", "CheetahRun", "FingerSpin", "FingerTurnEasy", "FingerTurnHard",
    "FishSwim", "HopperHop", "HopperStand", "HumanoidStand", "HumanoidWalk", "HumanoidRun", "PendulumSwingup",
    "PointMass", "ReacherEasy", "ReacherHard", "SwimmerSwimmer6", "WalkerRun", "WalkerStand", "WalkerWalk",
    # locomotion
    "ApolloJoystickFlatTerrain", "BarkourJoystick", "BerkeleyHumanoidJoystickFlatTerrain",
    "BerkeleyHumanoidJoystickRoughTerrain", "G1JoystickFlatTerrain", "G1JoystickRoughTerrain",
    "Go1JoystickFlatTerrain", "Go1JoystickRoughTerrain", "Go1Getup", "Go1Handstand", "Go1Footstand",
    "H1InplaceGaitTracking", "H1JoystickGaitTracking", "Op3Joystick", "SpotFlatTerrainJoystick", "SpotGetup",
    "SpotJoystickGaitTracking", "T1JoystickFlatTerrain", "T1JoystickRoughTerrain",
    # manipulation
    "AlohaHandOver", "AlohaSinglePegInsertion", "PandaPickCube", "PandaPickCubeOrientation",
    "PandaPickCubeCartesian", "PandaOpenCabinet", "PandaRobotiqPushCube", "LeapCubeReorient",
    "LeapCubeRotateZAxis", "AeroCubeRotateZAxis",
)  # mujoco_playground.registry.ALL_ENVS (playground 0.2.0)
GYMNAX = (
    "CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0",
    "Asterix-MinAtar", "Breakout-MinAtar", "Freeway-MinAtar", "Seaquest-MinAtar", "SpaceInvaders-MinAtar",
    "Catch-bsuite", "DeepSea-bsuite", "MemoryChain-bsuite", "UmbrellaChain-bsuite", "DiscountingChain-bsuite",
    "MNISTBandit-bsuite", "SimpleBandit-bsuite", "FourRooms-misc", "MetaMaze-misc", "PointRobot-misc",
    "BernoulliBandit-misc", "GaussianBandit-misc", "Reacher-misc", "Swimmer-misc", "Pong-misc", "FrozenLake-misc",
)  # gymnax.registered_envs (gymnax 1.0.1)

COLLECTIONS = {"brax": BRAX, "playground": PLAYGROUND, "gymnax": GYMNAX}
# The module and constructor of each collection, imported when one of its envs is first made.
_CONSTRUCTORS = {
    "from_brax": "gymjax.envs.external.brax",
    "from_playground": "gymjax.envs.external.playground",
    "from_gymnax": "gymjax.envs.external.gymnax",
}


def env_id(collection: str, name: str) -> str:
    """``"brax/halfcheetah-v0"``, ``"gymnax/CartPole-v1"``: a name keeps its own version."""
    return f"{collection}/{name}" if re.search(r"-v\d+$", name) else f"{collection}/{name}-v0"


IDS: dict[str, tuple[str, str]] = {
    env_id(collection, name): (collection, name) for collection, names in COLLECTIONS.items() for name in names
}


def constructor(name: str):
    """``from_brax``, ``from_playground`` or ``from_gymnax``, imported now."""
    return getattr(importlib.import_module(_CONSTRUCTORS[name]), name)


def make(collection: str, name: str, **kwargs: Any):
    """The env ``name`` of ``collection`` (what a registered id builds)."""
    return constructor(f"from_{collection}")(name, **kwargs)
