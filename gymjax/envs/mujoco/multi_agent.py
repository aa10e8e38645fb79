"""Gymnasium-Robotics' MaMuJoCo factorizations of the MuJoCo tasks, on MJX or MuJoCo C.

Source matched: ``gymnasium_robotics/envs/multiagent_mujoco/mujoco_multi.py`` (Gymnasium-Robotics
1.4). One class, :class:`MultiAgentMujoco`, composes a single-agent task (physics, reward,
termination and ``state()`` are the task's) and decides only who drives which actuator and who
observes what, as one scenario of :data:`~gymjax.envs.mujoco.multi_agent_graphs.SCENARIOS`
(MaMuJoCo's graphs, its ``obsk.py``) says. Each agent's observation is that module's
:func:`~gymjax.envs.mujoco.multi_agent_graphs.observed_items`, run once, at construction, on
indices: at each step it is one gather from the concatenated fields it reads, built with ``jnp``
inside ``jit``/``vmap``.

Differences from MaMuJoCo, all deliberate: observations are float32 (MaMuJoCo's are
float64); action bounds are each actuator's ``ctrlrange`` (MaMuJoCo broadcasts the first
actuator's, the same for every task here); agents' own observation options of the task
change only :meth:`MultiAgentMujoco.global_state`; custom ``agent_factorization`` is not
supported (custom ``local_categories`` / ``global_categories`` are).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import gymnasium
import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from gymjax.core import Env, State, check_agents
from gymjax.envs.mujoco.base import field
from gymjax.envs.mujoco.multi_agent_graphs import SCENARIOS, hops, observed_items

if TYPE_CHECKING:
    from mujoco import mjx

# A multi-agent state is a plain State whose ``obs`` is a dict ``agent -> [obs_dim]``:
# being the same pytree class, it passes through EpisodeWrapper, VmapWrapper and
# AutoReset unchanged.

# -- What the tables' names compute

# An observed item's transform, by the name the tables give it.
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


class MultiAgentMujoco(Env["mjx.Model"]):
    """A MuJoCo task split among agents as MaMuJoCo splits it.

    Args:
        scenario: a key of :data:`~gymjax.envs.mujoco.multi_agent_graphs.SCENARIOS` (MaMuJoCo's
            name: ``"HalfCheetah"``, ...).
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

    scenario_name: str | None = None  # the scenario built (a subclass's own, as MultiAnt's)

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
        self.cpu_only = self.task.cpu_only
        self.session_compiler_options = self.task.session_compiler_options
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
    """A scenario of :data:`~gymjax.envs.mujoco.multi_agent_graphs.SCENARIOS` with methods of its
    own (:class:`~gymjax.envs.mujoco.MultiAnt`): ``scenario_name`` and ``default_agent_conf`` are
    class attributes. A scenario without is a registry line of :class:`MultiAgentMujoco`."""

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

