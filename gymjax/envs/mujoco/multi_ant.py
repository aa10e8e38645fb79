"""JaxMultiAnt-v0: the Ant of Gymnasium-Robotics' MaMuJoCo, split among agents, on MJX.

Source matched: ``gymnasium_robotics/envs/multiagent_mujoco/mujoco_multi.py`` and
``obsk.py`` (Gymnasium-Robotics 1.4), scenario ``"Ant"``. The physics, reward and
termination are :class:`~gymjax.envs.mujoco.Ant`'s (JaxAnt-v0, Ant-v5 semantics);
this class only decides who drives which actuator and who observes what:

- ``agent_conf`` partitions the 8 leg joints among agents as MaMuJoCo does
  (``"2x4"``, ``"2x4d"``, ``"4x2"``); agents are named ``agent_0, agent_1, ...``
  and each agent's actions are in MaMuJoCo's order.
- Local observations follow MaMuJoCo's defaults for Ant, in the same order: for
  every joint the agent drives (sorted by name), its qpos, qvel and the external
  contact forces ``cfrc_ext`` (clipped to [-1, 1]) of the bodies assigned to that
  joint, each body once; then qpos of the joints 1..``agent_obsk`` hops away in
  the leg graph (a leg joins its hip and ankle, the torso joins the four hips);
  then the torso's ``qpos[2:7]`` and ``qvel[:6]``.
- Reward, ``terminated`` and ``truncated`` are shared: one scalar each, the
  single-agent Ant's. Per-agent dicts are built by the PettingZoo adapter.

Differences from MaMuJoCo, all deliberate: observations are float32 (MaMuJoCo's
are float64); local observations are clipped to [-1, 1] whatever Ant's
``contact_force_range`` (MaMuJoCo's ``body_fn`` does the same), and Ant's
observation options change only :meth:`MultiAnt.global_state`; custom
``local_categories`` / ``global_categories`` / factorizations are not supported.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from gymjax.core import Env, State, check_agents
from gymjax.envs import spec
from gymjax.envs.mujoco.ant import Ant
from gymjax.envs.mujoco.base import field

# A multi-agent state is a plain State whose ``obs`` is a dict ``agent -> [obs_dim]``:
# being the same pytree class, it passes through EpisodeWrapper, VmapWrapper and
# AutoReset unchanged.

# MaMuJoCo numbers the legs 1..4, leg i being joints hip_i and ankle_i of ant.xml;
# these are the bodies by which each leg hangs from the torso.
_LEG_ROOTS = {1: "front_left_leg", 2: "front_right_leg", 3: "back_leg", 4: "right_back_leg"}

AGENT_CONFS: dict[str, tuple[tuple[int, ...], ...]] = {
    "2x4": ((1, 2), (3, 4)),  # front legs, back legs
    "2x4d": ((1, 4), (2, 3)),  # diagonal pairs
    "4x2": ((1,), (2,), (3,), (4,)),  # a leg each
}

# MaMuJoCo's default observation categories for Ant, by hop distance; deeper
# rings use the last entry.
_LOCAL_CATEGORIES = (("qpos", "qvel", "cfrc_ext"), ("qpos",))
_CFRC_CLIP = 1.0
# The torso's free joint: qpos[0:2] (x, y) are left out, as in Ant-v5's observation.
_ROOT_QPOS = slice(2, 7)
_ROOT_QVEL = slice(0, 6)


@dataclasses.dataclass(frozen=True)
class _Joint:
    """One leg joint of ant.xml: where its state lives and what it observes."""

    name: str
    qpos: int
    qvel: int
    actuator: int
    bodies: tuple[int, ...]  # the bodies whose cfrc_ext this joint observes


def _leg_joints(m: mujoco.MjModel) -> dict[str, _Joint]:
    """The 8 leg joints, with MaMuJoCo's assignment of bodies to joints.

    A hip observes the torso and its leg's root body; an ankle observes the leg
    root, the thigh (``aux_i``) and the shin (unnamed in ant.xml: the body that
    the ankle joint moves).
    """

    def body(name):
        return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)

    actuator_of = {
        int(m.actuator_trnid[a, 0]): a
        for a in range(m.nu)
        if m.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
    }
    joints = {}
    for leg, root in _LEG_ROOTS.items():
        hip = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"hip_{leg}")
        ankle = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"ankle_{leg}")
        if min(hip, ankle, body(root), body("torso")) < 0 or {hip, ankle} - actuator_of.keys():
            raise ValueError(
                f"the model has no actuated joints hip_{leg}/ankle_{leg} under body {root!r}: "
                "JaxMultiAnt-v0 needs Gymnasium's ant.xml layout"
            )
        bodies = {
            hip: (body("torso"), body(root)),
            ankle: (body(root), int(m.jnt_bodyid[hip]), int(m.jnt_bodyid[ankle])),
        }
        for jid, observed in bodies.items():
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, jid)
            joints[name] = _Joint(
                name,
                int(m.jnt_qposadr[jid]),
                int(m.jnt_dofadr[jid]),
                actuator_of[jid],
                observed,
            )
    return joints


def _edges() -> list[frozenset[str]]:
    """MaMuJoCo's Ant graph: each hip-ankle pair, and the four hips (the torso)."""
    legs = [frozenset({f"hip_{i}", f"ankle_{i}"}) for i in _LEG_ROOTS]
    return [*legs, frozenset(f"hip_{i}" for i in _LEG_ROOTS)]


def _rings(own: tuple[str, ...], edges: list[frozenset[str]], k: int) -> list[list[str]]:
    """Joints at exactly 0, 1, ..., k hops from ``own``, each ring sorted by name."""
    seen = set(own)
    frontier = set(own)
    rings = [sorted(own)]
    for _ in range(k):
        frontier = set().union(*(e for e in edges if e & frontier)) - seen
        seen |= frontier
        rings.append(sorted(frontier))
    return rings


class MultiAnt(Env[mjx.Model]):
    """Ant-v5 on MJX, its 8 actuators split among agents (MaMuJoCo's ``"Ant"``).

    Args:
        agent_conf: ``"2x4"`` (front legs / back legs), ``"2x4d"`` (diagonal
            pairs) or ``"4x2"`` (one leg each).
        agent_obsk: how many hops of neighbouring joints each agent observes.
        **ant_kwargs: :class:`~gymjax.envs.mujoco.Ant`'s options (``solver``,
            ``engine``, ``ctrl_cost_weight``, ...).

    ``reset(key) -> State`` and ``step(state, actions)`` where ``actions`` is
    a dict ``agent -> [n_actions(agent)]``; ``state.obs`` is a dict ``agent ->
    [obs_dim(agent)]`` float32, ``state.reward`` / ``terminated`` / ``truncated``
    are shared scalars. Under ``vmap`` every leaf gains a leading ``[N]``.
    """

    max_episode_steps = spec("JaxMultiAnt-v0").max_episode_steps
    reset_info_keys = Ant.reset_info_keys
    params_by_name = Ant.params_by_name  # params go to the Ant as they come

    def __init__(self, agent_conf: str = "2x4", agent_obsk: int = 1, **ant_kwargs: Any):
        if agent_conf not in AGENT_CONFS:
            raise ValueError(f"unknown agent_conf {agent_conf!r}; valid choices: {sorted(AGENT_CONFS)}")
        if isinstance(agent_obsk, bool) or not isinstance(agent_obsk, int) or agent_obsk < 0:
            raise ValueError(f"agent_obsk must be an int >= 0, got {agent_obsk!r}")
        self.agent_conf = agent_conf
        self.agent_obsk = agent_obsk
        self.ant = Ant(**ant_kwargs)
        m = self.ant.mj_model
        joints = _leg_joints(m)
        edges = _edges()

        self.agents = tuple(f"agent_{i}" for i in range(len(AGENT_CONFS[agent_conf])))
        self.agent_joints: dict[str, tuple[str, ...]] = {}  # in each agent's action order
        self.agent_actuators: dict[str, tuple[int, ...]] = {}
        self._obs_index: dict[str, np.ndarray] = {}
        for agent, legs in zip(self.agents, AGENT_CONFS[agent_conf]):
            names = tuple(name for leg in legs for name in (f"hip_{leg}", f"ankle_{leg}"))
            self.agent_joints[agent] = names
            self.agent_actuators[agent] = tuple(joints[n].actuator for n in names)
            self._obs_index[agent] = self._observation_index(_rings(names, edges, agent_obsk), joints)

        # Position in the concatenated agents' actions of each actuator's control.
        flat = [a for agent in self.agents for a in self.agent_actuators[agent]]
        if sorted(flat) != list(range(m.nu)):
            raise ValueError(f"agent_conf {agent_conf!r} does not drive each of the {m.nu} actuators once")
        self._action_order = np.argsort(flat)

        low, high = m.actuator_ctrlrange.T.astype(np.float32)
        self.action_spaces = {
            agent: gymnasium.spaces.Box(low[list(acts)], high[list(acts)], dtype=np.float32)
            for agent, acts in self.agent_actuators.items()
        }
        self.observation_spaces = {
            agent: gymnasium.spaces.Box(-np.inf, np.inf, index.shape, np.float32)
            for agent, index in self._obs_index.items()
        }
        self.action_space = gymnasium.spaces.Dict(self.action_spaces)
        self.observation_space = gymnasium.spaces.Dict(self.observation_spaces)
        self.state_space = self.ant.observation_space  # of global_state()
        self.metadata = self.ant.metadata

    def _observation_index(self, rings: list[list[str]], joints: dict[str, _Joint]) -> np.ndarray:
        """Indices into ``[qpos, qvel, cfrc_ext.ravel()]`` making one agent's observation."""
        m = self.ant.mj_model
        qvel_at, cfrc_at = m.nq, m.nq + m.nv
        index: list[int] = []
        observed_bodies: set[int] = set()  # MaMuJoCo reports a body shared by two joints once
        for depth, ring in enumerate(rings):
            categories = _LOCAL_CATEGORIES[min(depth, len(_LOCAL_CATEGORIES) - 1)]
            for name in ring:
                joint = joints[name]
                for category in categories:
                    if category == "qpos":
                        index.append(joint.qpos)
                    elif category == "qvel":
                        index.append(qvel_at + joint.qvel)
                    else:
                        for b in joint.bodies:
                            if b not in observed_bodies:
                                index.extend(range(cfrc_at + 6 * b, cfrc_at + 6 * b + 6))
                                observed_bodies.add(b)
        index.extend(range(m.nq)[_ROOT_QPOS])
        index.extend(qvel_at + i for i in range(m.nv)[_ROOT_QVEL])
        return np.asarray(index, np.int32)

    @property
    def default_params(self) -> mjx.Model:
        return self.ant.default_params

    @property
    def dt(self) -> float:
        return self.ant.dt

    def local_observations(self, qpos, qvel, cfrc) -> dict[str, jax.Array]:
        """Each agent's observation from ``qpos [nq]``, ``qvel [nv]``, ``cfrc_ext [nbody, 6]``."""
        source = jnp.concatenate(
            [jnp.ravel(qpos), jnp.ravel(qvel), jnp.clip(cfrc, -_CFRC_CLIP, _CFRC_CLIP).ravel()]
        ).astype(jnp.float32)
        return {agent: source[index] for agent, index in self._obs_index.items()}

    def _with_local_obs(self, state: State) -> State:
        data = state.env_state
        return state.replace(obs=self.local_observations(data.qpos, data.qvel, field(data, "cfrc_ext")))

    def global_action(self, actions: dict[str, jax.Array]) -> jax.Array:
        """The ``[nu]`` control of the single-agent Ant from a dict of agents' actions.

        Raises ``ValueError`` for missing or unknown agents and wrong shapes (these
        are static, so the check costs nothing under ``jit``).
        """
        check_agents(actions, self.agents)
        parts = []
        for agent in self.agents:
            action = jnp.asarray(actions[agent])
            expected = self.action_spaces[agent].shape
            if action.shape != expected:
                raise ValueError(f"action of {agent} must have shape {expected}, got {action.shape}")
            parts.append(action)
        return jnp.concatenate(parts)[self._action_order]

    def reset(self, key, params=None) -> State:
        """The same initial state as ``Ant.reset(key)``, observed per agent."""
        return self._with_local_obs(self.ant.reset(key, params))

    def reset_to(self, qpos, qvel, params=None) -> State:
        return self._with_local_obs(self.ant.reset_to(qpos, qvel, params))

    def step(self, state: State, actions: dict[str, jax.Array], params=None) -> State:
        return self._with_local_obs(self.ant.step(state, self.global_action(actions), params))

    def global_state(self, state: State) -> jax.Array:
        """The single-agent Ant's observation ``[105]`` (MaMuJoCo's ``state()``)."""
        return self.ant.observation(state.env_state)  # the composed Ant's own observation code

    def render(self, state, **kwargs):
        return self.ant.render(state, **kwargs)

    def close(self) -> None:
        self.ant.close()

    def __repr__(self) -> str:
        conf, solver = self.agent_conf, self.ant.solver
        return f"MultiAnt(agent_conf={conf!r}, agent_obsk={self.agent_obsk}, solver={solver!r})"
