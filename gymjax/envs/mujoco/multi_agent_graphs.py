"""MaMuJoCo's graphs of the MuJoCo tasks, as data, and the recipe of a local observation.

Source matched: ``gymnasium_robotics/envs/multiagent_mujoco/obsk.py`` (Gymnasium-Robotics 1.4),
as :mod:`gymjax.envs.mujoco.multi_agent` matches its ``mujoco_multi.py``. What differs between
tasks is data, :data:`SCENARIOS`: MaMuJoCo's graph (``get_parts_and_edges``) with its nodes'
qpos/qvel/actuator indices and bodies, the hyperedges, the global nodes, the partitions per
``agent_conf``, and the default local categories per hop depth (``_generate_local_categories``).

A local observation is MaMuJoCo's ``build_obs`` (:func:`observed_items`): for each hop depth
``k`` (0: the agent's own nodes; nodes of a depth sorted by label, :func:`hops`), for each node,
the categories of depth ``k`` (a node's ``extra`` items replace a category's default: Hopper's
clipped velocities, Swimmer's velocity pairs, Reacher's sin/cos and ``fingertip_dist``, the
root's left-out x); body categories (``cinert``, ``cvel``, ``cfrc_ext``) report each body once
per category; then the global categories of the global nodes. The recipe gives indices, not
values: the env turns them into one gather at construction.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from gymjax.envs.mujoco.ant import Ant
from gymjax.envs.mujoco.base import MujocoEnv
from gymjax.envs.mujoco.half_cheetah import HalfCheetah
from gymjax.envs.mujoco.hopper import Hopper
from gymjax.envs.mujoco.humanoid import Humanoid
from gymjax.envs.mujoco.humanoid_standup import HumanoidStandup
from gymjax.envs.mujoco.reacher import Reacher
from gymjax.envs.mujoco.swimmer import Swimmer
from gymjax.envs.mujoco.walker2d import Walker2d

# -- The table's vocabulary

# One observed number: (field, transform, index into that field). A field is an MjData field or
# one of the env's derived fields (``fingertip_dist``), a transform one of its named functions
# (``"clip1"``; :data:`~gymjax.envs.mujoco.multi_agent.DERIVED`, ``TRANSFORMS``); an index is an
# int (negative counts from the end, as in MaMuJoCo) or, for a body field, (body, column).
Item = tuple[str, str, Any]

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

    ``rings``: the agent's nodes by hop depth (:func:`hops`). ``widths``: columns of each body
    field (``cinert``: 10), to spell out a body's row.
    """
    items: list[Item] = []
    seen: set[tuple[str, int]] = set()  # (category, body) already observed: each body once
    for node, category in _local_slots(rings, local_categories):
        items += _node_items(node, category, widths, seen, any_body_field=False)
    seen = set()  # the global nodes' bodies are counted apart from the local ones
    for node, category in _global_slots(global_nodes, global_categories):
        items += _node_items(node, category, widths, seen, any_body_field=True)
    return items


def _local_slots(
    rings: list[list[Node]], local_categories: tuple[tuple[str, ...], ...]
) -> Iterator[tuple[Node, str]]:
    """(node, category) in ``build_obs``'s local order: by depth, then node, then the depth's
    categories (depths past the last listed use the last)."""
    for depth, ring in enumerate(rings):
        yield from itertools.product(ring, local_categories[min(depth, len(local_categories) - 1)])


def _global_slots(
    global_nodes: tuple[Node, ...], global_categories: tuple[str, ...]
) -> Iterator[tuple[Node, str]]:
    """(node, category) in ``build_obs``'s global order: by category, then node."""
    return ((node, category) for category, node in itertools.product(global_categories, global_nodes))


def _node_items(node: Node, category: str, widths: Mapping[str, int], seen: set[tuple[str, int]],
                any_body_field: bool) -> list[Item]:
    """What ``node`` contributes of ``category``: its ``extra`` items, its qpos/qvel entry (a joint's
    ``qfrc_actuator`` is at its qvel index), or its bodies' rows of a body field. Locally only
    :data:`BODY_CATEGORIES` are body fields (other categories observe nothing), globally any other
    category (``any_body_field``), as in ``build_obs``."""
    if category in node.extra:
        return list(node.extra[category])
    if category in ("qpos", "qvel"):
        return [(category, "", getattr(node, category))]
    if category == "qfrc_actuator":
        return [(category, "", node.qvel)]
    if not any_body_field and category not in BODY_CATEGORIES:
        return []
    return _body_items(node, category, widths, seen)


def _body_items(
    node: Node, category: str, widths: Mapping[str, int], seen: set[tuple[str, int]]
) -> list[Item]:
    """The rows of ``category`` of ``node``'s bodies not yet in ``seen`` (which gains them)."""
    new = [body for body in dict.fromkeys(node.bodies) if (category, body) not in seen]
    seen.update((category, body) for body in new)
    return [(category, node.body_transform, (body, j)) for body in new for j in range(widths[category])]
