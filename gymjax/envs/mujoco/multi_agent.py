"""Gymnasium-Robotics' MaMuJoCo factorizations of the MuJoCo tasks, on MJX or MuJoCo C.

Source matched: ``gymnasium_robotics/envs/multiagent_mujoco/mujoco_multi.py`` and
``obsk.py`` (Gymnasium-Robotics 1.4). One class, :class:`MultiAgentMujoco`, composes a
single-agent task (physics, reward, termination and ``state()`` are the task's) and
decides only who drives which actuator and who observes what. What differs between
tasks is data, :data:`SCENARIOS`: MaMuJoCo's graph (``get_parts_and_edges``) with its
nodes' qpos/qvel/actuator indices and bodies, the hyperedges, the global nodes, the
partitions per ``agent_conf``, and the default local categories per hop depth
(``_generate_local_categories``).

A local observation is MaMuJoCo's ``build_obs``: for each hop depth ``k`` (0: the
agent's own nodes; nodes of a depth sorted by label), for each node, the categories of
depth ``k`` (a node's ``extra`` items replace a category's default: Hopper's clipped
velocities, Swimmer's velocity pairs, Reacher's sin/cos and ``fingertip_dist``, the
root's left-out x); body categories (``cinert``, ``cvel``, ``cfrc_ext``) report each
body once per category; then the global categories of the global nodes. Here that
recipe runs once, at construction, on indices: each agent's observation is one gather
from the concatenated fields it reads, built with ``jnp`` inside ``jit``/``vmap``.

Differences from MaMuJoCo, all deliberate: observations are float32 (MaMuJoCo's are
float64); action bounds are each actuator's ``ctrlrange`` (MaMuJoCo broadcasts the first
actuator's, the same for every task here); agents' own observation options of the task
change only :meth:`MultiAgentMujoco.global_state`; custom ``agent_factorization`` is not
supported (custom ``local_categories`` / ``global_categories`` are).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
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
from gymjax.envs.mujoco.base import MujocoEnv, field
from gymjax.envs.mujoco.half_cheetah import HalfCheetah
from gymjax.envs.mujoco.hopper import Hopper
from gymjax.envs.mujoco.humanoid import Humanoid
from gymjax.envs.mujoco.humanoid_standup import HumanoidStandup
from gymjax.envs.mujoco.reacher import Reacher
from gymjax.envs.mujoco.swimmer import Swimmer
from gymjax.envs.mujoco.walker2d import Walker2d

# A multi-agent state is a plain State whose ``obs`` is a dict ``agent -> [obs_dim]``:
# being the same pytree class, it passes through EpisodeWrapper, VmapWrapper and
# AutoReset unchanged.

# -- The table's vocabulary

# One observed number: (field, transform, index into that field). A field is an MjData
# field or one of DERIVED; an index is an int (negative counts from the end, as in
# MaMuJoCo) or, for a body field, (body, column).
Item = tuple[str, str, Any]

TRANSFORMS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "": lambda x: x,
    "sin": jnp.sin,
    "cos": jnp.cos,
    "clip1": lambda x: jnp.clip(x, -1.0, 1.0),  # Ant's body_fn
    "clip10": lambda x: jnp.clip(x, -10.0, 10.0),  # Hopper's velocities
}


def _fingertip_dist(fields: Mapping[str, jax.Array], m: mujoco.MjModel) -> jax.Array:
    """Reacher's ``data.body("fingertip").xpos - data.body("target").xpos`` (x, y, z)."""
    tip = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "fingertip")
    target = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "target")
    return fields["xpos"][tip] - fields["xpos"][target]


# Fields computed from MjData fields: name -> (the MjData fields read, function).
DERIVED: dict[str, tuple[tuple[str, ...], Callable[..., jax.Array]]] = {
    "fingertip_dist": (("xpos",), _fingertip_dist),
}
BODY_CATEGORIES = ("cvel", "cinert", "cfrc_ext")  # the local categories build_obs reads per body


def _items(name: str, indices, transform: str = "") -> tuple[Item, ...]:
    return tuple((name, transform, i) for i in indices)


@dataclasses.dataclass(frozen=True, eq=False)  # compared by identity, like MaMuJoCo's Nodes
class Node:
    """One node of MaMuJoCo's graph (``obsk.Node``): a joint, its actuator, its bodies.

    ``extra``: category -> the items observed instead of the category's default (an empty
    tuple disables it). ``body_transform``: MaMuJoCo's ``body_fn`` (``"clip1"``).
    """

    label: str
    qpos: int | None
    qvel: int | None
    actuator: int | None
    bodies: tuple[int, ...] = ()
    extra: Mapping[str, tuple[Item, ...]] = dataclasses.field(default_factory=dict)
    body_transform: str = ""


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One task's factorizations: MaMuJoCo's ``get_parts_and_edges(label, ...)`` as data."""

    task: type[MujocoEnv]
    partitions: Mapping[str, tuple[tuple[Node, ...], ...]]  # agent_conf -> per agent, in action order
    edges: tuple[tuple[Node, ...], ...]  # hyperedges
    globals: tuple[Node, ...]
    local_categories: tuple[tuple[str, ...], ...]  # per hop depth; deeper ones use the last
    global_categories: tuple[str, ...] = ("qpos", "qvel")


def _half_cheetah() -> Scenario:
    bthigh, bshin, bfoot = Node("bthigh", -6, -6, 0), Node("bshin", -5, -5, 1), Node("bfoot", -4, -4, 2)
    fthigh, fshin, ffoot = Node("fthigh", -3, -3, 3), Node("fshin", -2, -2, 4), Node("ffoot", -1, -1, 5)
    root_x = Node("root_x", 0, 0, None, extra={"qpos": ()})
    return Scenario(
        HalfCheetah,
        {
            "2x3": ((bthigh, bshin, bfoot), (fthigh, fshin, ffoot)),
            "6x1": tuple((n,) for n in (bthigh, bshin, bfoot, fthigh, fshin, ffoot)),
        },
        ((bfoot, bshin), (bshin, bthigh), (bthigh, fthigh), (fthigh, fshin), (fshin, ffoot)),
        (root_x, Node("root_z", 1, 1, None), Node("root_y", 2, 2, None)),
        (("qpos", "qvel"), ("qpos",)),
    )


def _ant() -> Scenario:
    torso = 1
    legs = {1: (2, 3, 4), 2: (5, 6, 7), 3: (8, 9, 10), 4: (11, 12, 13)}  # leg root, aux_i, ankle body
    actuators = {1: 2, 2: 4, 3: 6, 4: 0}  # ant.xml's motors: hip_4, ankle_4, hip_1, ankle_1, ...
    hip, ankle = {}, {}
    for i, (root, aux, foot) in legs.items():
        at = -10 + 2 * i  # qpos/qvel: hip_1 is -8, ankle_1 -7, ..., ankle_4 -1
        hip[i] = Node(f"hip_{i}", at, at, actuators[i], (torso, root), body_transform="clip1")
        ankle[i] = Node(
            f"ankle_{i}", at + 1, at + 1, actuators[i] + 1, (root, aux, foot), body_transform="clip1"
        )
    root = Node(
        "root", 0, 0, None, extra={"qpos": _items("qpos", range(2, 7)), "qvel": _items("qvel", range(6))}
    )
    part = {i: (hip[i], ankle[i]) for i in legs}
    return Scenario(
        Ant,
        {
            "2x4": (part[1] + part[2], part[3] + part[4]),  # front legs, back legs
            "2x4d": (part[1] + part[4], part[2] + part[3]),  # diagonal pairs
            "4x2": (part[1], part[2], part[3], part[4]),  # a leg each
        },
        (*((ankle[i], hip[i]) for i in (4, 1, 2, 3)), (hip[4], hip[1], hip[2], hip[3])),
        (root,),
        (("qpos", "qvel", "cfrc_ext"), ("qpos",)),
    )


def _hopper() -> Scenario:
    def clipped(i):
        return {"qvel": _items("qvel", [i], "clip10")}

    thigh = Node("thigh_joint", -3, -3, 0, extra=clipped(-3))
    leg = Node("leg_joint", -2, -2, 1, extra=clipped(-2))
    foot = Node("foot_joint", -1, -1, 2, extra=clipped(-1))
    root_x = Node("root_x", 0, 0, None, extra={"qpos": (), **clipped(0)})
    return Scenario(
        Hopper,
        {"3x1": ((thigh,), (leg,), (foot,))},
        ((foot, leg), (leg, thigh)),
        (root_x, Node("root_z", 1, 1, None, extra=clipped(1)), Node("root_y", 2, 2, None, extra=clipped(2))),
        (("qpos", "qvel"), ("qpos",)),
    )


def _walker2d() -> Scenario:
    thigh, leg, foot = (
        Node("thigh_joint", -6, -6, 0),
        Node("leg_joint", -5, -5, 1),
        Node("foot_joint", -4, -4, 2),
    )
    thigh_l, leg_l = Node("thigh_left_joint", -3, -3, 3), Node("leg_left_joint", -2, -2, 4)
    foot_l = Node("foot_left_joint", -1, -1, 5)
    root_x = Node("root_x", 0, 0, None, extra={"qpos": ()})
    return Scenario(
        Walker2d,
        {"2x3": ((foot, leg, thigh), (foot_l, leg_l, thigh_l))},
        ((foot, leg), (leg, thigh), (foot_l, leg_l), (leg_l, thigh_l), (thigh, thigh_l)),
        (root_x, Node("root_z", 1, 1, None), Node("root_y", 2, 2, None)),
        (("qpos", "qvel"), ("qpos",)),
    )


def _swimmer() -> Scenario:
    rot2 = Node("rot2", -2, -2, 0, extra={"qvel": _items("qvel", [0, 3])})
    rot3 = Node("rot3", -1, -1, 1, extra={"qvel": _items("qvel", [1, 4])})
    return Scenario(
        Swimmer,
        {"2x1": ((rot2,), (rot3,))},
        ((rot2, rot3),),
        (Node("free_body_rot", 2, 2, None),),
        (("qpos", "qvel"), ("qpos",)),
    )


def _reacher() -> Scenario:
    body0, body1, fingertip = 1, 2, 3

    def angle(i):
        return (("qpos", "sin", i), ("qpos", "cos", i))

    joint0 = Node("joint0", -4, -4, 0, (body0, body1), extra={"qpos": angle(-4)})
    joint1 = Node(
        "joint1",
        -3,
        -3,
        1,
        (body1, fingertip),
        extra={"fingertip_dist": _items("fingertip_dist", range(3)), "qpos": angle(-3)},
    )
    targets = (
        Node("target_x", -2, -2, None, extra={"qvel": ()}),
        Node("target_y", -1, -1, None, extra={"qvel": ()}),
    )
    return Scenario(
        Reacher,
        {"2x1": ((joint0,), (joint1,))},
        ((joint0, joint1),),
        targets,
        (("qpos", "qvel", "fingertip_dist"), ("qpos",)),
    )


def _humanoid(task: type[MujocoEnv]) -> Scenario:
    # Bodies of humanoid.xml. MaMuJoCo's qpos/qvel indices and actuators, as it numbers them:
    # its "abdomen_y" reads qpos[-17] (the abdomen_z joint) and drives motor 0 (abdomen_y's),
    # its "abdomen_z" the other way round.
    torso, lwaist, pelvis, r_thigh, r_shin, r_foot, l_thigh, l_shin, l_foot = range(1, 10)
    r_upper, r_lower, l_upper, l_lower = range(10, 14)
    spec_ = [
        ("abdomen_y", (torso, lwaist, pelvis)),
        ("abdomen_z", (torso, lwaist, pelvis)),
        ("abdomen_x", (pelvis, r_thigh, l_thigh)),
        ("right_hip_x", (r_thigh, r_shin)),
        ("right_hip_z", (r_thigh, r_shin)),
        ("right_hip_y", (r_thigh, r_shin)),
        ("right_knee", (r_shin, r_foot)),
        ("left_hip_x", (l_thigh, l_shin)),
        ("left_hip_z", (l_thigh, l_shin)),
        ("left_hip_y", (l_thigh, l_shin)),
        ("left_knee", (l_shin, l_foot)),
        ("right_shoulder1", (torso, r_upper, r_lower)),
        ("right_shoulder2", (torso, r_upper, r_lower)),
        ("right_elbow", (r_lower,)),
        ("left_shoulder1", (torso, l_upper, l_lower)),
        ("left_shoulder2", (torso, l_upper, l_lower)),
        ("left_elbow", (l_lower,)),
    ]
    n = {label: Node(label, i - 17, i - 17, i, bodies) for i, (label, bodies) in enumerate(spec_)}
    abdomen = (n["abdomen_x"], n["abdomen_y"], n["abdomen_z"])
    r_hip = (n["right_hip_x"], n["right_hip_y"], n["right_hip_z"])
    l_hip = (n["left_hip_x"], n["left_hip_y"], n["left_hip_z"])
    r_arm = (n["right_shoulder1"], n["right_shoulder2"], n["right_elbow"])
    l_arm = (n["left_shoulder1"], n["left_shoulder2"], n["left_elbow"])
    root = Node(
        "root",
        None,
        None,
        None,
        extra={"qpos": _items("qpos", range(2, 7)), "qvel": _items("qvel", range(6))},
    )
    return Scenario(
        task,
        {"9|8": (abdomen + r_arm + l_arm, r_hip + (n["right_knee"],) + l_hip + (n["left_knee"],))},
        (
            abdomen,
            r_hip,
            l_hip,
            (n["left_elbow"], n["left_shoulder1"], n["left_shoulder2"]),
            (n["right_elbow"], n["right_shoulder1"], n["right_shoulder2"]),
            (n["left_knee"], *l_hip),
            (n["right_knee"], *r_hip),
            (n["left_shoulder1"], n["left_shoulder2"], *abdomen),
            (n["right_shoulder1"], n["right_shoulder2"], *abdomen),
            (*abdomen, *l_hip),
            (*abdomen, *r_hip),
        ),
        (root,),
        (("qpos", "qvel", "cinert", "cvel", "qfrc_actuator", "cfrc_ext"), ("qpos",)),
    )


# MaMuJoCo's scenario name -> its factorizations.
SCENARIOS: dict[str, Scenario] = {
    "Ant": _ant(),
    "HalfCheetah": _half_cheetah(),
    "Hopper": _hopper(),
    "Walker2d": _walker2d(),
    "Swimmer": _swimmer(),
    "Reacher": _reacher(),
    "Humanoid": _humanoid(Humanoid),
    "HumanoidStandup": _humanoid(HumanoidStandup),
}


def agent_confs(scenario: str) -> list[str]:
    """The ``agent_conf`` values of a scenario."""
    return sorted(SCENARIOS[scenario].partitions)


def hops(own: tuple[Node, ...], edges: tuple[tuple[Node, ...], ...], k: int) -> list[list[Node]]:
    """MaMuJoCo's ``get_joints_at_kdist``: nodes at exactly 0..k hops, each ring sorted by label."""
    seen, frontier = set(own), set(own)
    rings = [sorted(own, key=lambda n: n.label)]
    for _ in range(k):
        frontier = {other for e in edges if frontier & set(e) for other in e} - seen
        seen |= frontier
        rings.append(sorted(frontier, key=lambda n: n.label))
    return rings


def observed_items(
    rings: list[list[Node]],
    local_categories: tuple[tuple[str, ...], ...],
    global_nodes: tuple[Node, ...],
    global_categories: tuple[str, ...],
    widths: Mapping[str, int],
) -> list[Item]:
    """MaMuJoCo's ``build_obs`` on indices: what one agent observes, in order.

    ``widths``: columns of each body field (``cinert``: 10), to spell out a body's row.
    """
    items: list[Item] = []

    def bodies(node, category, seen):
        for body in node.bodies:
            if body not in seen.setdefault(category, set()):
                items.extend((category, node.body_transform, (body, j)) for j in range(widths[category]))
                seen[category].add(body)

    seen: dict[str, set[int]] = {}
    for depth, ring in enumerate(rings):
        for node in ring:
            for category in local_categories[min(depth, len(local_categories) - 1)]:
                if category in node.extra:
                    items.extend(node.extra[category])
                elif category in ("qpos", "qvel"):
                    items.append((category, "", getattr(node, category)))
                elif category == "qfrc_actuator":
                    items.append((category, "", node.qvel))
                elif category in BODY_CATEGORIES:
                    bodies(node, category, seen)
    seen = {}
    for category in global_categories:
        for node in global_nodes:
            if category in node.extra:
                items.extend(node.extra[category])
            elif category in ("qpos", "qvel"):
                items.append((category, "", getattr(node, category)))
            elif category == "qfrc_actuator":
                items.append((category, "", node.qvel))
            else:
                bodies(node, category, seen)
    return items


class MultiAgentMujoco(Env[mjx.Model]):
    """A MuJoCo task split among agents as MaMuJoCo splits it.

    Args:
        scenario: a key of :data:`SCENARIOS` (MaMuJoCo's name: ``"HalfCheetah"``, ...).
        agent_conf: one of the scenario's partitions (``"6x1"``, ``"2x3"``, ...);
            None: the scenario's first.
        agent_obsk: how many hops of neighbouring nodes each agent observes.
        local_categories: per hop depth, the categories observed (MaMuJoCo's option);
            None: the scenario's default. Deeper depths use the last entry.
        global_categories: the categories of the global nodes; default ``("qpos", "qvel")``.
        **task_kwargs: the single-agent task's options (``engine``, ``solver``, ...).

    ``reset(key) -> State`` and ``step(state, actions)`` where ``actions`` is a dict
    ``agent -> [n_actions(agent)]``; ``state.obs`` is a dict ``agent -> [obs_dim(agent)]``
    float32, ``state.reward`` / ``terminated`` / ``truncated`` are the task's shared scalars.
    Under ``vmap`` every leaf gains a leading ``[N]``.

    On the C engine the task returns only the MjData fields it declares; fields the
    agents read beyond those (custom categories) reach it as ``extra_data_fields``.
    """

    scenario_name: str | None = None  # set by the registered subclasses
    max_episode_steps: int | None = None

    def __init__(
        self,
        scenario: str,
        agent_conf: str | None = None,
        agent_obsk: int = 1,
        local_categories: list[list[str]] | None = None,
        global_categories: tuple[str, ...] | None = None,
        **task_kwargs: Any,
    ):
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; valid choices: {sorted(SCENARIOS)}")
        table = SCENARIOS[scenario]
        if agent_conf is None:
            agent_conf = next(iter(table.partitions))
        if agent_conf not in table.partitions:
            raise ValueError(f"unknown agent_conf {agent_conf!r}; valid choices: {sorted(table.partitions)}")
        if isinstance(agent_obsk, bool) or not isinstance(agent_obsk, int) or agent_obsk < 0:
            raise ValueError(f"agent_obsk must be an int >= 0, got {agent_obsk!r}")
        self.scenario_name = scenario
        self.agent_conf = agent_conf
        self.agent_obsk = agent_obsk
        if local_categories is None:
            local_categories = table.local_categories
        self.local_categories = tuple(tuple(c) for c in local_categories)
        self.global_categories = tuple(
            table.global_categories if global_categories is None else global_categories
        )
        if not self.local_categories:
            raise ValueError("local_categories must name the categories of at least depth 0")
        partition = table.partitions[agent_conf]
        self.agents = tuple(f"agent_{i}" for i in range(len(partition)))

        # What every agent observes: first the fields' names, which the task must be built
        # to read (the C engine returns only the fields a task declares), then, from the
        # built task's model, the indices.
        def observed(widths):
            return {
                agent: observed_items(
                    hops(nodes, table.edges, agent_obsk),
                    self.local_categories,
                    table.globals,
                    self.global_categories,
                    widths,
                )
                for agent, nodes in zip(self.agents, partition)
            }

        names = {name for agent_items in observed(_AnyWidth()).values() for name, _, _ in agent_items}
        self._fields = tuple(sorted({f for name in names for f in DERIVED.get(name, ((name,), None))[0]}))
        extra = tuple(f for f in self._fields if f not in ("qpos", "qvel") and f not in table.task.data_fields)
        self.task = table.task(**task_kwargs, **({"extra_data_fields": extra} if extra else {}))
        m = self.task.mj_model
        shapes = _field_shapes(m, names)
        items = observed({name: shape[-1] for name, shape in shapes.items()})
        self._sources = tuple(
            sorted(
                {(name, transform) for agent_items in items.values() for name, transform, _ in agent_items}
            )
        )
        for _, transform in self._sources:
            if transform not in TRANSFORMS:
                raise ValueError(f"{scenario}: unknown transform {transform!r}; known: {sorted(TRANSFORMS)}")
        offsets, at = {}, 0
        for source in self._sources:
            offsets[source] = at
            at += int(np.prod(shapes[source[0]]))
        self._obs_index = {
            agent: np.asarray(
                [offsets[(n, t)] + _flat(i, shapes[n]) for n, t, i in agent_items], np.int32
            ).reshape(-1)
            for agent, agent_items in items.items()
        }

        self.agent_nodes: dict[str, tuple[str, ...]] = {}  # labels, in each agent's action order
        self.agent_actuators: dict[str, tuple[int, ...]] = {}
        for agent, nodes in zip(self.agents, partition):
            self.agent_nodes[agent] = tuple(n.label for n in nodes)
            self.agent_actuators[agent] = tuple(_flat(n.actuator, (m.nu,)) for n in nodes)
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
        self.state_space = self.task.observation_space  # of global_state()
        self.metadata = self.task.metadata
        self.reset_info_keys = self.task.reset_info_keys
        self.params_by_name = self.task.params_by_name  # params go to the task as they come

    @property
    def default_params(self) -> mjx.Model:
        return self.task.default_params

    @property
    def dt(self) -> float:
        return self.task.dt

    def observe(self, fields: Mapping[str, jax.Array]) -> dict[str, jax.Array]:
        """Each agent's observation from MjData fields by name (``qpos``, ``qvel``, and
        those of :attr:`observed_fields`), float32."""
        derived = {
            name: fn({f: fields[f] for f in needs}, self.task.mj_model)
            for name, (needs, fn) in DERIVED.items()
            if any(s[0] == name for s in self._sources)
        }
        parts = [
            TRANSFORMS[transform](
                jnp.asarray(derived[name] if name in derived else fields[name], jnp.float32)
            ).ravel()
            for name, transform in self._sources
        ]
        source = jnp.concatenate(parts)
        return {agent: source[index] for agent, index in self._obs_index.items()}

    @property
    def observed_fields(self) -> tuple[str, ...]:
        """The MjData fields the agents' observations read."""
        return self._fields

    def local_observations(self, data) -> dict[str, jax.Array]:
        """Each agent's observation of a physics state (``mjx.Data``, ``HostData`` or ``mujoco.MjData``)."""
        return self.observe({name: field(data, name) for name in self._fields})

    def _with_local_obs(self, state: State) -> State:
        return state.replace(obs=self.observe({name: field(state.env_state, name) for name in self._fields}))

    def global_action(self, actions: dict[str, jax.Array]) -> jax.Array:
        """The ``[nu]`` control of the single-agent task from a dict of agents' actions.

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
        """The same initial state as the task's ``reset(key)``, observed per agent."""
        return self._with_local_obs(self.task.reset(key, params))

    def reset_to(self, qpos, qvel, params=None) -> State:
        return self._with_local_obs(self.task.reset_to(qpos, qvel, params))

    def step(self, state: State, actions: dict[str, jax.Array], params=None) -> State:
        return self._with_local_obs(self.task.step(state, self.global_action(actions), params))

    def global_state(self, state: State) -> jax.Array:
        """The single-agent task's observation (MaMuJoCo's ``state()``)."""
        return self.task.observation(state.env_state)

    def render(self, state, **kwargs):
        return self.task.render(state, **kwargs)

    def close(self) -> None:
        self.task.close()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(agent_conf={self.agent_conf!r}, agent_obsk={self.agent_obsk}, "
            f"solver={self.task.solver!r})"
        )


def _flat(index, shape: tuple[int, ...]) -> int:
    """A (possibly negative) int or (row, column) index as a flat index into ``shape``."""
    index = index if isinstance(index, tuple) else (index,)
    if len(index) != len(shape) or any(not -s <= i < s for i, s in zip(index, shape)):
        raise ValueError(f"index {index} is out of range for a field of shape {shape}")
    return int(np.ravel_multi_index(tuple(i % s for i, s in zip(index, shape)), shape))


class _AnyWidth(dict):
    """Body widths while only the fields' names are wanted."""

    def __missing__(self, name):
        return 1


def _field_shapes(m: mujoco.MjModel, names: set[str]) -> dict[str, tuple[int, ...]]:
    """Shapes of the named MjData fields and :data:`DERIVED` fields, for model ``m``."""
    d = mujoco.MjData(m)
    shapes = {}
    for name in sorted(names):
        if name in DERIVED:
            needs, fn = DERIVED[name]
            shapes[name] = np.shape(fn({f: getattr(d, f) for f in needs}, m))
        elif isinstance(getattr(d, name, None), np.ndarray):
            shapes[name] = np.shape(getattr(d, name))
        else:
            raise ValueError(
                f"the agents observe {name!r}, neither an MjData field nor one of {sorted(DERIVED)}"
            )
    return shapes


class RegisteredMultiAgentMujoco(MultiAgentMujoco):
    """A scenario of :data:`SCENARIOS` as a registered id: ``scenario_name`` and
    ``default_agent_conf`` are class attributes, the time limit the id's."""

    default_agent_conf: str

    def __init__(
        self,
        agent_conf: str | None = None,
        agent_obsk: int = 1,
        local_categories: list[list[str]] | None = None,
        global_categories: tuple[str, ...] | None = None,
        **task_kwargs: Any,
    ):
        super().__init__(
            self.scenario_name,
            self.default_agent_conf if agent_conf is None else agent_conf,
            agent_obsk,
            local_categories,
            global_categories,
            **task_kwargs,
        )


class MultiHalfCheetah(RegisteredMultiAgentMujoco):
    """JaxMultiHalfCheetah-v0: MaMuJoCo's ``"HalfCheetah"`` (``"6x1"``, ``"2x3"``)."""

    scenario_name = "HalfCheetah"
    default_agent_conf = "6x1"
    max_episode_steps = spec("JaxMultiHalfCheetah-v0").max_episode_steps


class MultiHopper(RegisteredMultiAgentMujoco):
    """JaxMultiHopper-v0: MaMuJoCo's ``"Hopper"`` (``"3x1"``)."""

    scenario_name = "Hopper"
    default_agent_conf = "3x1"
    max_episode_steps = spec("JaxMultiHopper-v0").max_episode_steps


class MultiWalker2d(RegisteredMultiAgentMujoco):
    """JaxMultiWalker2d-v0: MaMuJoCo's ``"Walker2d"`` (``"2x3"``)."""

    scenario_name = "Walker2d"
    default_agent_conf = "2x3"
    max_episode_steps = spec("JaxMultiWalker2d-v0").max_episode_steps


class MultiSwimmer(RegisteredMultiAgentMujoco):
    """JaxMultiSwimmer-v0: MaMuJoCo's ``"Swimmer"`` (``"2x1"``)."""

    scenario_name = "Swimmer"
    default_agent_conf = "2x1"
    max_episode_steps = spec("JaxMultiSwimmer-v0").max_episode_steps


class MultiReacher(RegisteredMultiAgentMujoco):
    """JaxMultiReacher-v0: MaMuJoCo's ``"Reacher"`` (``"2x1"``)."""

    scenario_name = "Reacher"
    default_agent_conf = "2x1"
    max_episode_steps = spec("JaxMultiReacher-v0").max_episode_steps


class MultiHumanoid(RegisteredMultiAgentMujoco):
    """JaxMultiHumanoid-v0: MaMuJoCo's ``"Humanoid"`` (``"9|8"``: upper and lower body)."""

    scenario_name = "Humanoid"
    default_agent_conf = "9|8"
    max_episode_steps = spec("JaxMultiHumanoid-v0").max_episode_steps


class MultiHumanoidStandup(RegisteredMultiAgentMujoco):
    """JaxMultiHumanoidStandup-v0: MaMuJoCo's ``"HumanoidStandup"`` (``"9|8"``)."""

    scenario_name = "HumanoidStandup"
    default_agent_conf = "9|8"
    max_episode_steps = spec("JaxMultiHumanoidStandup-v0").max_episode_steps
