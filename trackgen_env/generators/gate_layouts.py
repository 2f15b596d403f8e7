"""Real race layouts: gate layouts from files, checked, written into a gate generator's input.

A layout is the gates of one closed course in race order: each gate's centre [m], its
orientation (local +x is the normal, the direction of travel; local y the opening's
width, local z its height) and its opening (width, height) [m]. The world frame is z up
with the floor at z = 0, in metres, as in every file read here. The loader reads the
conventions of the public drone-racing layouts:

* **Centres only** (``uzh-rpg/rpg_time_optimal`` ``tracks/track.yaml``, the UZH Split-S
  of Foehn et al., Science Robotics 2021): ``gates: [[x, y, z], ...]``. No orientation:
  each gate's normal is the bisector of the horizontal directions of its incoming and
  outgoing legs (as the generator faces its gates); a leg with no horizontal extent (a
  gate stacked above the next, the Split-S) leaves the other leg's direction. No size:
  ``gate_size``.
* **Generic gates** (this package's convention, for hand-written layouts):
  ``gates:`` a list of mappings, each ``position: [x, y, z]`` and at most one of
  ``yaw`` [rad], ``yaw_deg`` [deg] (the normal's heading from +x, counter-clockwise),
  ``rpy`` [rad] (roll, pitch, yaw, extrinsic x-y-z, as ``scipy``'s ``from_euler("xyz")``),
  ``quaternion_wxyz`` / ``quaternion_xyzw`` (the gate frame, in that order), or
  ``corners: [[x, y, z] x 4]`` instead of ``position`` (as AlphaPilot, below); a gate with
  none faces along the course as for centres only. Per gate ``size`` (square) or
  ``width`` and ``height`` [m]; file-wide ``gate_size`` or ``gate_width`` and
  ``gate_height``. YAML (``.yaml``, ``.yml``) or TOML (``.toml``: ``[[gates]]`` tables).
* **lsy_drone_racing** (TOML, ``config/level*.toml``): ``[[env.track.gates]]`` with
  ``pos`` and ``rpy`` [rad, extrinsic x-y-z]; +x is the direction a gate counts from.
  The file gives no size field; its comments give a 0.4 m square opening, the default here.
* **UZH sim2real_drone_racing** (``parameters/goals.yaml``): ``goal_positions`` ``{x, y,
  z, gate}`` and ``goal_orientations`` ``{yaw, offset}`` [rad]. ``z`` is the gate model's
  height; the fly-through point is ``SIM2REAL_GATE_HEIGHT`` (0.8 m, ``parameters/main.yaml``)
  above it, which is the centre here. ``yaw`` is read as an axis (its sign is not
  consistent with the direction of travel): the normal is ``+-(cos yaw, sin yaw, 0)``,
  the sign that points along the course. Entries with ``gate: 0`` are waypoints, not gates.
  ``offset`` (a sideways shift along yaw + 90 deg) is applied.
* **FlightGoggles / AlphaPilot 2019** (two files, loaded together as ROS loads them into
  one parameter namespace): ``nominal_gate_locations.yaml`` (``GateN: nominal_location:
  [[x, y, z] x 4]``, the four corners in no consistent order) and ``challenge_final.yaml``
  (``gate_names``: the race order). Corners -> centre (their mean), normal (the plane's,
  the right singular vector of the smallest singular value of the centred corners,
  signed along the course), width and height (the corners' extent along the opening's
  lateral axis ``normalize(z x normal)`` and its vertical axis ``normal x lateral``).

Every gate's frame is rebuilt upright from its normal: lateral ``normalize(z x normal)``,
vertical ``normal x lateral`` (the opening a gate course's ``Progress`` counts a pass
through). A normal may climb (a pitched gate), but a gate whose opening is rolled about
its normal by more than ``MAX_ROLL`` or that lies flat (normal within 10 deg of vertical)
is refused. A list that repeats itself (several laps written out, the last possibly cut
short, as the Split-S file's 19 entries of 7 gates) is reduced to one lap. A start pose
in the file is not read: a gate course starts ``start_clearance`` behind gate 0.

A gate generator built with ``GateGenConfig(source="layout", num_gates=G)`` reads the
inputs ``"gates.pose"`` (``[E, G]`` ``wp.transform``) and ``"gates.count"`` (``[E]`` int32);
:func:`write_gate_layout` writes both, and the opening into the params
``"gate_frames.gate_width"`` / ``"gate_frames.gate_height"``. A gate course has one opening
size per env (``GateResult.gate_width`` is ``[E]``), so a layout whose gates differ in size
is flown with its smallest width and height (:attr:`RaceLayout.course_width`), centred in
every gate: a pass through it is a pass through the real gate.

YAML needs PyYAML (``pip install -e ".[gates]"``; TOML before Python 3.11: tomli); files are parsed with
``yaml.safe_load`` and ``tomllib``, which build plain data and never run code.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import warp as wp

from ..core.checks import install_hint
from .centerline_io import warn_far_coordinates

try:  # the standard library's TOML reader from Python 3.11; its backport before
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        tomllib = None

__all__ = [
    "RaceLayout",
    "load_gate_layout",
    "load_layout_folder",
    "layout_files",
    "parse_gate_layout",
    "write_gate_layout",
    "DEFAULT_GATE_SIZE",
    "LSY_GATE_SIZE",
    "LSY_POLE_RADIUS",
    "SCG_GATE_SIZE",
    "SCG_GATE_HEIGHTS",
    "SCG_POLE",
    "SIM2REAL_GATE_HEIGHT",
    "MAX_ROLL",
]

#: [m] square opening of gates whose file gives no size: the 5 ft (1.52 m) standard gate of
#: MultiGP, the common size of racing gates.
DEFAULT_GATE_SIZE = 1.5
#: [m] square opening of the lsy_drone_racing gates (its config files' comments).
LSY_GATE_SIZE = 0.4
#: [m] radius of the lsy_drone_racing poles (0.03 m diameter, its config files' comments); they stand on the
#: floor and their ``pos`` is the top.
LSY_POLE_RADIUS = 0.015
#: [m] square opening ("edge") of the safe-control-gym competition gates.
SCG_GATE_SIZE = 0.45
#: [m] centre height above a safe-control-gym gate's ``z`` by its type (0: tall, 1: low).
SCG_GATE_HEIGHTS = {0: 1.0, 1: 0.525}
#: [m] (height, radius) of the safe-control-gym competition obstacles: cylinders standing at their ``z``.
SCG_POLE = (1.05, 0.05)
#: TOGT-Planner gate types whose opening is read (the rest, e.g. a spherical waypoint, are refused).
TOGT_TYPES = ("RectanglePrisma", "TrianglePrisma", "PentagonPrisma", "HexagonPrisma", "SingleBall")
_TOGT_KEYS = ("type", "name", "position", "rpy", "width", "height", "margin", "marginW", "marginH", "length",
              "midpoints", "stationary", "radius", "side")
#: [m] fly-through point above a sim2real_drone_racing goal's ``z`` (its ``gate_height`` parameter).
SIM2REAL_GATE_HEIGHT = 0.8
#: [rad] largest roll of an opening about its normal that is accepted (2 deg).
MAX_ROLL = math.radians(2.0)

_ORIENTATION_KEYS = ("yaw", "yaw_deg", "rpy", "quaternion_wxyz", "quaternion_xyzw", "corners")
_FLAT = math.cos(math.radians(10.0))  # |normal z| above this: the gate lies flat
_Z = np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class RaceLayout:
    """The gates of one closed course, in race order (checked on construction).

    Attributes:
        position: ``[G, 3]`` float64 [m] gate centres (``G >= 3``).
        orientation: ``[G, 4]`` float64 unit quaternions (x, y, z, w; Warp's order), body
            (gate) to world: local +x the normal (direction of travel), local y horizontal.
        width, height: ``[G]`` float64 [m] openings (> 0).
        name: where the layout came from (a file path), for messages.
        obstacles: ``[K, 5]`` float64 vertical cylinders (poles) beside the gates: x, y [m] of
            the axis, bottom and top z [m], radius [m] (``K = 0``: none). A gate course
            collides with its gates' frames only: ``GatesVectorEnv`` refuses a layout with
            obstacles (fly the gates alone with :meth:`without_obstacles`).

    Raises:
        ValueError: a wrong shape, a non-finite value, fewer than 3 gates, a size <= 0, a
            zero quaternion, two consecutive gates at the same centre, every centre on one
            line, a gate lying flat (normal within 10 deg of vertical) or rolled about its
            normal by more than ``MAX_ROLL`` (the loaders' rules).

    Warns:
        UserWarning: two gates closer than the diagonal of the larger opening (their frames
            may overlap); coordinates 131 km or more from the origin (float32's precision).
    """

    position: np.ndarray
    orientation: np.ndarray
    width: np.ndarray
    height: np.ndarray
    name: str = "layout"
    obstacles: np.ndarray | None = None

    def __post_init__(self):
        pos = np.array(self.position, dtype=np.float64)
        quat = np.array(self.orientation, dtype=np.float64)
        width = np.array(self.width, dtype=np.float64)
        height = np.array(self.height, dtype=np.float64)
        n = self.name
        if pos.ndim != 2 or pos.shape[1] != 3:
            raise ValueError(f"{n}: position must be [G, 3] (x, y, z) in m, got shape {pos.shape}")
        G = len(pos)
        if G < 3:
            raise ValueError(f"{n}: a closed gate course needs >= 3 gates, got {G}")
        for field, arr, shape in (("orientation", quat, (G, 4)), ("width", width, (G,)), ("height", height, (G,))):
            if arr.shape != shape:
                raise ValueError(f"{n}: {field} must have shape {shape} for {G} gates, got {arr.shape}")
        for field, arr in (("position", pos), ("orientation", quat), ("width", width), ("height", height)):
            bad = np.flatnonzero(~np.isfinite(arr.reshape(G, -1)).all(axis=1))
            if bad.size:
                raise ValueError(f"{n}: gate {bad[0]}'s {field} is not finite: {arr[bad[0]].tolist()}")
        bad = np.flatnonzero((width <= 0) | (height <= 0))
        if bad.size:
            raise ValueError(f"{n}: gate {bad[0]}'s opening must be > 0 m, got {width[bad[0]]} x {height[bad[0]]}")
        norm = np.linalg.norm(quat, axis=1)
        if np.any(norm < 1e-9):
            raise ValueError(f"{n}: gate {int(np.argmin(norm))}'s orientation is a zero quaternion")
        step = np.linalg.norm(np.roll(pos, -1, axis=0) - pos, axis=1)
        bad = np.flatnonzero(step < 1e-6)
        if bad.size:
            raise ValueError(f"{n}: gates {bad[0]} and {(bad[0] + 1) % G} are at the same centre "
                             f"{pos[bad[0]].tolist()}")
        warn_far_coordinates(pos, n)
        spread = np.linalg.svd(pos - pos.mean(axis=0), compute_uv=False)
        if spread[1] < 1e-3 * spread[0]:
            raise ValueError(f"{n}: the {G} gate centres lie on one line: a closed course cannot go round them "
                             f"(expected gates around a loop)")
        apart = np.linalg.norm(pos[:, None] - pos[None], axis=2) + np.diag(np.full(G, np.inf))
        reach = np.hypot(width, height)  # an opening's diagonal: frames closer than it may overlap
        close = apart < np.maximum(reach[:, None], reach[None])
        if close.any():
            i, j = (int(k) for k in np.argwhere(close)[0])
            warnings.warn(f"{n}: gates {i} and {j} are {apart[i, j]:.3g} m apart, closer than their openings' diagonal "
                          f"({max(reach[i], reach[j]):.3g} m): their frames may overlap, and a drone hits one flying "
                          f"through the other", UserWarning, stacklevel=3)
        quat = quat / norm[:, None]
        x, y, z, w = quat.T
        normal_z = 2.0 * (x * z - y * w)  # the z of the gate's +x (its normal) and +y (its width axis) in the world
        lateral_z = 2.0 * (y * z + x * w)
        bad = np.flatnonzero(np.abs(normal_z) > _FLAT)
        if bad.size:  # the loaders' upright frames never are: the same rules for a layout built here
            raise _flat_refusal(n, int(bad[0]), f"its normal's z is {normal_z[bad[0]]:.3f}")
        roll = np.arcsin(np.minimum(1.0, np.abs(lateral_z)))
        bad = np.flatnonzero(roll > MAX_ROLL)
        if bad.size:
            raise _roll_refusal(n, int(bad[0]), float(roll[bad[0]]))
        obstacles = _check_obstacles(self.obstacles, n)
        for field, arr in (("position", pos), ("orientation", quat), ("width", width), ("height", height),
                           ("obstacles", obstacles)):
            arr.setflags(write=False)
            object.__setattr__(self, field, arr)

    def without_obstacles(self) -> RaceLayout:
        """This layout with no obstacles: its gates alone (a drone flies through where the poles were)."""
        return RaceLayout(position=self.position, orientation=self.orientation, width=self.width, height=self.height,
                          name=self.name)

    @property
    def num_gates(self) -> int:
        """``G``."""
        return len(self.position)

    @property
    def normal(self) -> np.ndarray:
        """``[G, 3]`` unit normals (each gate's local +x in the world)."""
        return _rotate(self.orientation, np.array([1.0, 0.0, 0.0]))

    @property
    def course_width(self) -> float:
        """[m] the opening width a gate course flies this layout with: the smallest gate's."""
        return float(self.width.min())

    @property
    def course_height(self) -> float:
        """[m] the opening height a gate course flies this layout with: the smallest gate's."""
        return float(self.height.min())

    def length(self) -> float:
        """[m] length of the closed polyline through the gate centres."""
        return float(np.linalg.norm(np.roll(self.position, -1, axis=0) - self.position, axis=1).sum())


def _check_obstacles(obstacles, name: str) -> np.ndarray:
    """``[K, 5]`` float64 (x, y, bottom z, top z, radius) from ``obstacles`` (None: none)."""
    if obstacles is None:
        return np.zeros((0, 5))
    arr = np.array(obstacles, dtype=np.float64)
    if arr.size == 0:
        return np.zeros((0, 5))
    if arr.ndim != 2 or arr.shape[1] != 5:
        raise ValueError(f"{name}: obstacles must be [K, 5] (x, y, bottom z, top z, radius) in m, got shape "
                         f"{arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr).all(axis=1) | (arr[:, 4] <= 0) | (arr[:, 3] <= arr[:, 2]))
    if bad.size:
        raise ValueError(f"{name}: obstacle {bad[0]} must be finite with radius > 0 and top > bottom, got "
                         f"{arr[bad[0]].tolist()}")
    return arr


# --- files -----------------------------------------------------------------------------------
def load_gate_layout(path, *, gate_size: float | Sequence[float] | None = None) -> RaceLayout:
    """Load a gate layout from a file (or several, merged: the FlightGoggles pair).

    Args:
        path: a ``.yaml`` / ``.yml`` / ``.toml`` file, or a sequence of them whose top-level
            mappings are merged (a key in two files is an error), in the conventions of the
            module docstring.
        gate_size: [m] the opening of gates the file gives no size for: a number (square) or
            ``(width, height)``. Default: the convention's (lsy_drone_racing 0.4 m), else
            :data:`DEFAULT_GATE_SIZE`.

    Returns:
        the :class:`RaceLayout` (``name`` is the path, or the paths joined by ``" + "``).

    Raises:
        TypeError: ``path`` is neither a path nor a list of paths.
        FileNotFoundError: no such file.
        ImportError: a YAML file without PyYAML installed (names the extra to install).
        ValueError: a file that does not parse (or is not UTF-8 text), or a missing, malformed (wrong shape,
            non-numeric, non-finite) or contradictory field, fewer than 3 gates: the
            message names the file and the field.
    """
    if isinstance(path, (str, os.PathLike)):
        paths = [path]
    elif isinstance(path, (list, tuple)) and all(isinstance(p, (str, os.PathLike)) for p in path):
        paths = list(path)
    else:
        raise TypeError(f"load_gate_layout takes a file path (a str or os.PathLike) or a list of them, got "
                        f"{type(path).__name__} {path!r}"[:200])
    if not paths:
        raise ValueError("load_gate_layout needs at least one file")
    doc: dict = {}
    names = []
    for p in paths:
        p = os.fspath(p)
        names.append(p)
        data = _read(p)
        for key, value in data.items():
            if key in doc:
                raise ValueError(f"{p}: key {key!r} is also in an earlier file of {' + '.join(names[:-1])}")
            doc[key] = value
    return parse_gate_layout(doc, name=" + ".join(names), gate_size=gate_size)


def layout_files(folder) -> dict[str, list[str]]:
    """The gate layout files of a folder, grouped by layout: its ``.yaml`` / ``.yml`` / ``.toml`` files (not
    its subfolders).

    A file that holds a whole layout is one layout. A layout that needs two files (the
    FlightGoggles / AlphaPilot pair: the gate corners in one, the race order ``gate_names``
    in the other) is grouped when both sit in the folder: each file with ``gate_names`` takes
    the files that define its gates' ``nominal_location``. A file that is part of such a pair
    is not a layout of its own.

    Returns:
        name (the file name without its extension; for a pair, the race-order file's) -> its
        files (for :func:`load_gate_layout`), sorted by name.

    Raises:
        FileNotFoundError: no such folder, or no layout file in it.
        ValueError: a file that does not parse (the message names it).
    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"no folder {folder!r} (expected a folder of gate layout files)")
    paths = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if os.path.splitext(f)[1].lower() in (".yaml", ".yml", ".toml")
                   and os.path.isfile(os.path.join(folder, f)))
    if not paths:
        raise FileNotFoundError(f"{folder}: no gate layout files (.yaml, .yml, .toml)")
    docs = {p: _read(p) for p in paths}
    corners = {p for p, d in docs.items()
               if "gate_names" not in d and any(isinstance(v, dict) and "nominal_location" in v for v in d.values())}
    out = {}
    for p, doc in docs.items():
        if p in corners:
            continue
        files = [p]
        if "gate_names" in doc and isinstance(doc["gate_names"], list):
            needed = {g for g in doc["gate_names"] if isinstance(g, str) and not isinstance(doc.get(g), dict)}
            files += [c for c in sorted(corners) if needed & set(docs[c])]
        out[os.path.splitext(os.path.basename(p))[0]] = files
    return dict(sorted(out.items()))


def load_layout_folder(folder, *, gate_size: float | Sequence[float] | None = None) -> dict[str, RaceLayout]:
    """Every gate layout in a folder (:func:`layout_files`), loaded.

    Args:
        folder: the folder.
        gate_size: as for :func:`load_gate_layout`.

    Returns:
        name -> :class:`RaceLayout`, sorted by name.

    Raises:
        FileNotFoundError: no such folder, or no layout file in it.
        ValueError: a file that does not parse, or a layout file that is malformed (the
            message names the file and the field); a race order whose gates no file defines.
    """
    return {name: load_gate_layout(files if len(files) > 1 else files[0], gate_size=gate_size)
            for name, files in layout_files(folder).items()}


def _read(path: str) -> dict:
    """The top-level mapping of one YAML or TOML file."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no gate layout file at {path!r}")
    ext = os.path.splitext(path)[1].lower()
    if ext == ".toml":
        if tomllib is None:
            raise ImportError(f"{path}: reading TOML on Python < 3.11 needs tomli: {install_hint('gates')}")
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not valid TOML ({exc})") from exc
    elif ext in (".yaml", ".yml"):
        try:
            import yaml  # optional dependency: only YAML layouts need it
        except ImportError as exc:
            raise ImportError(
                f"{path}: reading YAML gate layouts needs PyYAML: {install_hint('gates')}, or pip install pyyaml"
            ) from exc
        try:
            with open(path, encoding="utf-8") as f:
                data = yaml.safe_load(f)
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not valid YAML ({exc})") from exc
    else:
        raise ValueError(f"{path}: expected a .yaml, .yml or .toml gate layout, got {ext or 'no extension'!r}")
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def parse_gate_layout(doc: dict, *, name: str = "layout",
                      gate_size: float | Sequence[float] | None = None) -> RaceLayout:
    """A :class:`RaceLayout` from a parsed file (the mapping ``yaml.safe_load`` / ``tomllib`` returns).

    Args and errors as for :func:`load_gate_layout` (``name`` is used in the messages).
    """
    if not isinstance(doc, dict):
        raise ValueError(f"{name}: expected a mapping at the top level, got {type(doc).__name__}")
    track = doc.get("env", {}).get("track") if isinstance(doc.get("env"), dict) else None
    if isinstance(track, dict) and "gates" in track:
        obstacles = _lsy_obstacles(track.get("obstacles", []), name)
        return _parse_gates(track["gates"], name, "env.track.gates", _size(gate_size, LSY_GATE_SIZE, name), lsy=True,
                            obstacles=obstacles)
    for key in ("quadrotor_config", "task_config"):
        if isinstance(doc.get(key), dict) and "gates" in doc[key]:
            return _parse_safe_control_gym(doc[key], name, key)
    if "orders" in doc:
        return _parse_togt(doc, name)
    if "goal_positions" in doc:
        return _parse_sim2real(doc, name, _size(gate_size, DEFAULT_GATE_SIZE, name))
    if "gate_names" in doc or any(isinstance(v, dict) and "nominal_location" in v for v in doc.values()):
        return _parse_flightgoggles(doc, name)
    if "gates" in doc:
        size = _file_size(doc, name) or _size(gate_size, DEFAULT_GATE_SIZE, name)
        obstacles = _generic_obstacles(doc.get("obstacles", []), name)
        return _parse_gates(doc["gates"], name, "gates", size, obstacles=obstacles)
    raise ValueError(
        f"{name}: no gate layout found: expected a 'gates' list, [[env.track.gates]] (lsy_drone_racing), "
        f"'quadrotor_config: gates' (safe-control-gym), 'orders' with GateN entries (TOGT-Planner), "
        f"'goal_positions' (sim2real_drone_racing) or 'gate_names' with GateN 'nominal_location' corners "
        f"(FlightGoggles), got the keys {sorted(map(str, doc))}"
    )


# --- conventions ------------------------------------------------------------------------------
def _parse_gates(entries, name: str, field: str, size: tuple[float, float], *, lsy: bool = False,
                 obstacles=None) -> RaceLayout:
    """``gates``: bare centres, or mappings of the generic / lsy_drone_racing convention."""
    if not isinstance(entries, list):
        raise ValueError(f"{name}: {field} must be a list of gates, got {type(entries).__name__}")
    if all(not isinstance(e, dict) for e in entries):
        pos = np.array([_vec(e, 3, f"{field}[{i}]", name) for i, e in enumerate(entries)]).reshape(-1, 3)
        pos = _one_lap(pos)
        _enough(len(pos), name, field)
        return _build(pos, [None] * len(pos), np.full(len(pos), size[0]), np.full(len(pos), size[1]), name,
                      obstacles)
    pos, frames, widths, heights = [], [], [], []
    for i, e in enumerate(entries):
        where = f"{field}[{i}]"
        if not isinstance(e, dict):
            raise ValueError(f"{name}: {where} must be a mapping like the other gates, got {e!r}")
        keys = [k for k in (("rpy",) if lsy else _ORIENTATION_KEYS) if k in e]
        if len(keys) > 1:
            raise ValueError(f"{name}: {where} gives more than one orientation: {keys}")
        known = ("pos", "rpy") if lsy else ("position", *_ORIENTATION_KEYS, "size", "width", "height")
        unread = sorted(str(k) for k in e if k not in known)
        if unread and not lsy:  # lsy_drone_racing's gates may carry keys of its own
            warnings.warn(f"{name}: {where} has fields that are not read: {unread} (the read ones: {list(known)})",
                          UserWarning, stacklevel=4)
        radians = e[keys[0]] if keys and keys[0] in ("yaw", "rpy") else None
        if _is_numeric(radians) and np.any(np.abs(np.atleast_1d(radians).astype(float)) > 2.0 * math.pi):
            warnings.warn(f"{name}: {where}.{keys[0]} is {e[keys[0]]!r}, over 2 pi: radians are expected (degrees? "
                          f"{'yaw_deg' if keys[0] == 'yaw' else 'convert them'})", UserWarning, stacklevel=4)
        w, h = _gate_size(e, where, name, size)
        if keys == ["corners"]:
            if "position" in e:
                raise ValueError(f"{name}: {where} gives both position and corners (the centre is the corners' mean)")
            corners = np.array(_vec(e["corners"], 12, f"{where}.corners", name)).reshape(4, 3)
            pos.append(corners.mean(axis=0))
            frames.append(("corners", corners, "size" in e or "width" in e))
        else:
            key = "pos" if lsy else "position"
            if key not in e:
                raise ValueError(f"{name}: {where} has no {key!r} field (the gate centre [x, y, z] in m)")
            pos.append(_vec(e[key], 3, f"{where}.{key}", name))
            frames.append(_frame(e, keys[0], where, name) if keys else None)
        widths.append(w)
        heights.append(h)
    _enough(len(pos), name, field)
    return _build(np.array(pos), frames, np.array(widths), np.array(heights), name, obstacles)


def _lsy_obstacles(entries, name: str) -> np.ndarray:
    """``[[env.track.obstacles]] pos``: the tops of poles standing on the floor."""
    if not isinstance(entries, list):
        raise ValueError(f"{name}: env.track.obstacles must be a list of {{pos}} tables, got {type(entries).__name__}")
    rows = []
    for i, e in enumerate(entries):
        where = f"env.track.obstacles[{i}]"
        if not isinstance(e, dict) or "pos" not in e:
            raise ValueError(f"{name}: {where} must be a table with pos (the pole's top [x, y, z] in m), got {e!r}")
        x, y, top = _vec(e["pos"], 3, f"{where}.pos", name)
        rows.append([x, y, 0.0, top, LSY_POLE_RADIUS])
    return np.array(rows).reshape(-1, 5)


def _generic_obstacles(entries, name: str) -> np.ndarray:
    """``obstacles: [[x, y, bottom z, top z, radius], ...]``: vertical cylinders."""
    if not isinstance(entries, list):
        raise ValueError(f"{name}: obstacles must be a list of [x, y, bottom z, top z, radius], got "
                         f"{type(entries).__name__}")
    return np.array([_vec(e, 5, f"obstacles[{i}]", name) for i, e in enumerate(entries)]).reshape(-1, 5)


def _rpy_matrix(r: float, p: float, y: float) -> np.ndarray:
    """Extrinsic x-y-z roll, pitch, yaw [rad] (``scipy``'s ``from_euler("xyz")``): ``Rz Ry Rx``."""
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


def _parse_safe_control_gym(config: dict, name: str, key: str) -> RaceLayout:
    """safe-control-gym's competition YAML: ``quadrotor_config: gates: [[x, y, z, r, p, y, type]]``."""
    gates, obstacles = config["gates"], config.get("obstacles", [])
    if not isinstance(gates, list):
        raise ValueError(f"{name}: {key}.gates must be a list of [x, y, z, r, p, y, type], got {type(gates).__name__}")
    if not isinstance(obstacles, list):
        raise ValueError(f"{name}: {key}.obstacles must be a list of [x, y, z, r, p, y], got "
                         f"{type(obstacles).__name__}")
    pos, frames = [], []
    for i, g in enumerate(gates):
        x, y, z, roll, pitch, yaw, kind = _vec(g, 7, f"{key}.gates[{i}]", name)
        if kind not in SCG_GATE_HEIGHTS:
            raise ValueError(f"{name}: {key}.gates[{i}]'s type (the 7th number) must be 0 (tall) or 1 (low), "
                             f"got {kind:g}")
        pos.append([x, y, z + SCG_GATE_HEIGHTS[int(kind)]])
        # the opening spans the gate frame's x axis: the normal is its y axis, read as an axis
        frames.append(("axis", _rpy_matrix(roll, pitch, yaw)[:, 1]))
    _enough(len(pos), name, f"{key}.gates")
    height, radius = SCG_POLE
    rows = []
    for i, o in enumerate(obstacles):
        x, y, z = _vec(o, 6, f"{key}.obstacles[{i}]", name)[:3]
        rows.append([x, y, z, z + height, radius])
    size = np.full(len(pos), SCG_GATE_SIZE)
    return _build(np.array(pos), frames, size, size.copy(), name, np.array(rows).reshape(-1, 5))


def _togt_opening(entry: dict, where: str, name: str) -> tuple[float, float]:
    """(width, height) [m] of a TOGT-Planner gate: a rectangle's own; for the other shapes the square
    inscribed in the shape's incircle (the part of any opening a square course gate fits)."""
    kind = entry.get("type")
    if kind not in TOGT_TYPES:
        raise ValueError(f"{name}: {where}.type must be one of {list(TOGT_TYPES)}, got {kind!r}")
    if kind == "RectanglePrisma":
        return (_positive(entry.get("width"), f"{where}.width", name),
                _positive(entry.get("height"), f"{where}.height", name))
    if kind == "TrianglePrisma":  # isosceles: base width, apex height
        w = _positive(entry.get("width"), f"{where}.width", name)
        h = _positive(entry.get("height"), f"{where}.height", name)
        r_in = w * h / (w + math.sqrt(w * w + 4.0 * h * h))
    elif kind == "PentagonPrisma":  # regular, circumradius
        r_in = _positive(entry.get("radius"), f"{where}.radius", name) * math.cos(math.pi / 5.0)
    elif kind == "HexagonPrisma":  # regular, side
        r_in = _positive(entry.get("side"), f"{where}.side", name) * math.sqrt(3.0) / 2.0
    else:  # SingleBall: a sphere the path passes through
        r_in = _positive(entry.get("radius"), f"{where}.radius", name)
    side = math.sqrt(2.0) * r_in
    return (side, side)


def _parse_togt(doc: dict, name: str) -> RaceLayout:
    """TOGT-Planner / rpg_time_optimal race tracks: ``orders: [GateN, ...]`` and per gate ``GateN:
    {type, position, rpy [deg], width, height | radius | side}``."""
    order = doc["orders"]
    if not isinstance(order, list) or not all(isinstance(g, str) for g in order):
        raise ValueError(f"{name}: orders must be a list of gate names, got {order!r}")
    pos, frames, widths, heights = [], [], [], []
    for i, gate in enumerate(order):
        entry = doc.get(gate)
        if not isinstance(entry, dict):
            raise ValueError(f"{name}: orders[{i}] = {gate!r} has no '{gate}:' entry (a mapping with type, position, "
                             f"rpy)")
        if "position" not in entry:
            raise ValueError(f"{name}: {gate} has no 'position' field (the gate centre [x, y, z] in m)")
        unread = sorted(str(k) for k in entry if k not in _TOGT_KEYS)
        if unread:
            warnings.warn(f"{name}: {gate} has fields that are not read: {unread}", UserWarning, stacklevel=4)
        pos.append(_vec(entry["position"], 3, f"{gate}.position", name))
        if "rpy" in entry:  # degrees; the gate's local z is its axis (rpy [0, -90, yaw] faces along yaw)
            r, p, y = (math.radians(v) for v in _vec(entry["rpy"], 3, f"{gate}.rpy", name))
            frames.append(("axis", _rpy_matrix(r, p, y)[:, 2]))
        else:
            frames.append(None)
        w, h = _togt_opening(entry, gate, name)
        widths.append(w)
        heights.append(h)
    lap = len(_one_lap(np.array(pos).reshape(-1, 3)))  # a track written out for several laps: one lap
    _enough(lap, name, "orders")
    return _build(np.array(pos[:lap]), frames[:lap], np.array(widths[:lap]), np.array(heights[:lap]), name)


def _parse_sim2real(doc: dict, name: str, size: tuple[float, float]) -> RaceLayout:
    goals, yaws = doc["goal_positions"], doc.get("goal_orientations")
    if not isinstance(goals, list):
        raise ValueError(f"{name}: goal_positions must be a list of {{x, y, z, gate}}, got {type(goals).__name__}")
    if not isinstance(yaws, list) or len(yaws) != len(goals):
        got = "none" if yaws is None else (f"{len(yaws)} entries" if isinstance(yaws, list) else type(yaws).__name__)
        raise ValueError(f"{name}: goal_orientations must list one {{yaw, offset}} per goal ({len(goals)}), got {got}")
    pos, frames = [], []
    for i, (g, o) in enumerate(zip(goals, yaws)):
        for where, item, keys in ((f"goal_positions[{i}]", g, ("x", "y", "z")),
                                  (f"goal_orientations[{i}]", o, ("yaw",))):
            if not isinstance(item, dict) or any(k not in item for k in keys):
                raise ValueError(f"{name}: {where} must be a mapping with {', '.join(keys)}, got {item!r}")
        if "gate" in g and _num(g["gate"], f"goal_positions[{i}].gate", name) == 0.0:
            continue  # a waypoint, not a gate
        x, y, z = (_num(g[k], f"goal_positions[{i}].{k}", name) for k in ("x", "y", "z"))
        yaw = _num(o["yaw"], f"goal_orientations[{i}].yaw", name)
        offset = _num(o.get("offset", 0.0), f"goal_orientations[{i}].offset", name)
        axis = np.array([math.cos(yaw), math.sin(yaw), 0.0])
        side = np.array([-axis[1], axis[0], 0.0])
        pos.append(np.array([x, y, z + SIM2REAL_GATE_HEIGHT]) + offset * side)
        frames.append(("axis", axis))
    _enough(len(pos), name, "goal_positions")
    return _build(np.array(pos), frames, np.full(len(pos), size[0]), np.full(len(pos), size[1]), name)


def _parse_flightgoggles(doc: dict, name: str) -> RaceLayout:
    order = doc.get("gate_names")
    if order is None:
        raise ValueError(f"{name}: no 'gate_names' (the race order): load the gate locations together with the "
                         f"challenge file that lists it, e.g. load_gate_layout([locations, challenge])")
    if not isinstance(order, list) or not all(isinstance(g, str) for g in order):
        raise ValueError(f"{name}: gate_names must be a list of gate names, got {order!r}")
    pos, frames = [], []
    for i, gate in enumerate(order):
        entry = doc.get(gate)
        if not isinstance(entry, dict) or "nominal_location" not in entry:
            raise ValueError(f"{name}: gate_names[{i}] = {gate!r} has no '{gate}: nominal_location' corners "
                             f"(load the nominal gate locations file too)")
        corners = np.array(_vec(entry["nominal_location"], 12, f"{gate}.nominal_location", name)).reshape(4, 3)
        pos.append(corners.mean(axis=0))
        frames.append(("corners", corners, False))
    _enough(len(pos), name, "gate_names")
    nan = np.full(len(pos), np.nan)  # from the corners
    return _build(np.array(pos), frames, nan, nan.copy(), name)


# --- geometry ---------------------------------------------------------------------------------
def _build(pos: np.ndarray, frames: list, width: np.ndarray, height: np.ndarray, name: str,
           obstacles=None) -> RaceLayout:
    """Normals (given, signed along the course, or from it), upright frames, corner sizes."""
    G = len(pos)
    course = _course_normals(pos, name)
    quats = np.empty((G, 4))
    width, height = width.astype(np.float64).copy(), height.astype(np.float64).copy()
    for k, frame in enumerate(frames):
        if frame is None:
            normal = course[k]
        elif frame[0] == "frame":
            normal = frame[1][:, 0]
            lateral = frame[1][:, 1]
            if float(normal @ course[k]) < -0.5:  # a given facing is kept, but rarely meant against the route
                warnings.warn(f"{name}: gate {k} faces against the route (its normal points back from gate "
                              f"{k - 1 if k else G - 1} "
                              f"to gate {(k + 1) % G}, "
                              f"{math.degrees(math.acos(max(-1.0, float(normal @ course[k])))):.0f} "
                              f"deg from the direction of travel): the course line turns back to pass it as it faces; "
                              f"turn it by 180 deg if the route passes it the other way", UserWarning, stacklevel=4)
            roll = math.asin(min(1.0, abs(float(lateral[2]))))
            if roll > MAX_ROLL:
                raise _roll_refusal(name, k, roll)
        else:
            if frame[0] == "axis":
                normal = frame[1]
            else:
                corners = frame[1]
                centred = corners - corners.mean(axis=0)
                _, sv, vt = np.linalg.svd(centred)
                if sv[1] < 1e-6 or sv[2] > 0.05 * sv[0]:
                    raise ValueError(f"{name}: gate {k}'s 4 corners do not span a plane (singular values "
                                     f"{sv.round(4).tolist()})")
                normal = vt[2]
            d = float(normal @ course[k])
            if abs(d) < 1e-6:
                d = float(normal @ (pos[(k + 1) % G] - pos[k - 1]))
            normal = normal if d >= 0 else -normal
        if abs(normal[2]) > _FLAT:
            raise _flat_refusal(name, k, f"normal {np.round(normal, 3).tolist()}")
        R = _upright(normal)
        quats[k] = _quat_from_matrix(R)
        if frame is not None and frame[0] == "corners" and not frame[2]:
            local = (frame[1] - frame[1].mean(axis=0)) @ R
            width[k] = np.ptp(local[:, 1])
            height[k] = np.ptp(local[:, 2])
    return RaceLayout(position=pos, orientation=quats, width=width, height=height, name=name, obstacles=obstacles)


def _course_normals(pos: np.ndarray, name: str) -> np.ndarray:
    """``[G, 3]`` horizontal normals facing along the loop: the bisector of the horizontal
    directions of each gate's incoming and outgoing legs; a leg with no horizontal extent
    (stacked gates) gives way to the other; a U-turn takes the outgoing leg."""
    G = len(pos)
    out = np.empty((G, 3))
    for k in range(G):
        d_in, d_out = _horizontal(pos[k] - pos[k - 1]), _horizontal(pos[(k + 1) % G] - pos[k])
        if d_in is None and d_out is None:
            raise ValueError(f"{name}: gate {k} is stacked above both neighbours: its orientation cannot follow the "
                             f"course")
        if d_in is None or d_out is None:
            out[k] = d_out if d_in is None else d_in
            continue
        b = d_in + d_out
        nb = np.linalg.norm(b)
        out[k] = b / nb if nb > 1e-6 else d_out
    return out


def _horizontal(d: np.ndarray):
    h = np.array([d[0], d[1], 0.0])
    n = np.linalg.norm(h)
    return h / n if n > 1e-6 else None


def _upright(normal: np.ndarray) -> np.ndarray:
    """Columns: the normal, the lateral axis ``normalize(z x normal)``, the vertical ``normal x lateral``."""
    n = normal / np.linalg.norm(normal)
    lateral = np.cross(_Z, n)
    lateral /= np.linalg.norm(lateral)
    return np.stack([n, lateral, np.cross(n, lateral)], axis=1)


def _quat_from_matrix(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of a rotation matrix (Shepperd, J. Guidance 1978)."""
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = [0.0, 0.0, 0.0, (R[k, j] - R[j, k]) / s]
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q / np.linalg.norm(q)


def _matrix_from_quat(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of the quaternion (x, y, z, w)."""
    x, y, z, w = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def gate_axes(quats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[G, 4]`` unit quaternions (x, y, z, w) -> the gates' local y (across the opening, its
    width) and local z (up the opening, its height) in the world, ``[G, 3]`` each."""
    return _rotate(quats, np.array([0.0, 1.0, 0.0])), _rotate(quats, np.array([0.0, 0.0, 1.0]))


def _rotate(quats: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.stack([_matrix_from_quat(q) @ v for q in quats])


def _flat_refusal(name: str, k: int, what: str) -> ValueError:
    return ValueError(f"{name}: gate {k} lies flat ({what}); only upright gates (normal more than 10 deg from "
                      f"vertical) are modelled")


def _roll_refusal(name: str, k: int, roll: float) -> ValueError:
    return ValueError(f"{name}: gate {k}'s opening is rolled by {math.degrees(roll):.1f} deg about its normal; only "
                      f"openings with a horizontal width axis are modelled (<= {math.degrees(MAX_ROLL):g} deg)")


def _is_numeric(value) -> bool:
    """Whether ``value`` is a number or a flat list of numbers (what the warnings may look at)."""
    if value is None:
        return False
    try:
        np.atleast_1d(value).astype(float)
    except (TypeError, ValueError):
        return False
    return True


def _frame(entry: dict, key: str, where: str, name: str):
    """The given orientation of a gate: ``("frame", R)`` or ``("axis", normal)``."""
    field = f"{where}.{key}"
    if key in ("yaw", "yaw_deg"):
        yaw = _num(entry[key], field, name)
        yaw = math.radians(yaw) if key == "yaw_deg" else yaw
        c, s = math.cos(yaw), math.sin(yaw)
        return ("frame", np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]))
    if key == "rpy":
        return ("frame", _rpy_matrix(*_vec(entry[key], 3, field, name)))
    q = np.array(_vec(entry[key], 4, field, name))
    if np.linalg.norm(q) < 1e-9:
        raise ValueError(f"{name}: {field} is a zero quaternion")
    xyzw = q if key == "quaternion_xyzw" else np.roll(q, -1)
    return ("frame", _matrix_from_quat(xyzw))


def _one_lap(pos: np.ndarray) -> np.ndarray:
    """The first lap of a list that repeats itself with period p (the last lap may stop short)."""
    n = len(pos)
    for p in range(1, n):
        idx = np.arange(n) % p
        if np.allclose(pos, pos[idx], rtol=0.0, atol=1e-9):
            return pos[:p]
    return pos


# --- fields -------------------------------------------------------------------------------------
def _num(value, field: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name}: {field} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name}: {field} must be finite, got {value!r}")
    return float(value)


def _vec(value, count: int, field: str, name: str) -> list[float]:
    """``count`` finite numbers from a (possibly nested) list, flattened."""
    flat = []

    def walk(v):
        if isinstance(v, (list, tuple)):
            for u in v:
                walk(u)
        else:
            flat.append(v)

    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name}: {field} must be a list of {count} numbers, got {value!r}")
    walk(value)
    if len(flat) != count:
        raise ValueError(f"{name}: {field} must hold {count} numbers, got {len(flat)}: {value!r}")
    return [_num(v, field, name) for v in flat]


def _enough(count: int, name: str, field: str) -> None:
    if count < 3:
        raise ValueError(f"{name}: {field}: a closed gate course needs >= 3 gates, got {count}")


def _size(gate_size, default: float, name: str) -> tuple[float, float]:
    if gate_size is None:
        return (default, default)
    one_number = isinstance(gate_size, (int, float)) and not isinstance(gate_size, bool)
    size = (gate_size, gate_size) if one_number else tuple(gate_size)
    if len(size) != 2:
        raise ValueError(f"gate_size must be a number or (width, height) in m, got {gate_size!r}")
    w, h = (_num(s, "gate_size", "gate_size") for s in size)
    if w <= 0 or h <= 0:
        raise ValueError(f"gate_size must be > 0 m, got {gate_size!r}")
    return (w, h)


def _file_size(doc: dict, name: str):
    """A file-wide ``gate_size`` or ``gate_width`` + ``gate_height`` (None when absent)."""
    if "gate_size" in doc:
        s = _positive(doc["gate_size"], "gate_size", name)
        return (s, s)
    if "gate_width" in doc or "gate_height" in doc:
        if not ("gate_width" in doc and "gate_height" in doc):
            raise ValueError(f"{name}: give both gate_width and gate_height (or gate_size for a square opening)")
        return (_positive(doc["gate_width"], "gate_width", name), _positive(doc["gate_height"], "gate_height", name))
    return None


def _gate_size(entry: dict, where: str, name: str, default: tuple[float, float]) -> tuple[float, float]:
    if "size" in entry:
        s = _positive(entry["size"], f"{where}.size", name)
        return (s, s)
    if "width" in entry or "height" in entry:
        if not ("width" in entry and "height" in entry):
            raise ValueError(f"{name}: {where}: give both width and height (or size for a square opening)")
        return (_positive(entry["width"], f"{where}.width", name), _positive(entry["height"], f"{where}.height", name))
    return default


def _positive(value, field: str, name: str) -> float:
    v = _num(value, field, name)
    if v <= 0:
        raise ValueError(f"{name}: {field} must be > 0 m, got {value!r}")
    return v


# --- the generator input ----------------------------------------------------------------------
def write_gate_layout(generator, layout: RaceLayout, mask: np.ndarray | None = None) -> None:
    """Write one layout into the generator inputs of every env (or the ``mask``ed envs).

    Writes ``generator.inputs["gates.pose"]`` and ``["gates.count"]`` in place (stable
    arrays that every regeneration and recorded graph reads) and sets the params
    ``"gate_frames.gate_width"`` / ``"gate_frames.gate_height"`` of those envs to the
    layout's :attr:`~RaceLayout.course_width` / :attr:`~RaceLayout.course_height`;
    regenerate afterwards.

    Args:
        generator: a gate generator built with ``GateGenConfig(source="layout")``.
        layout: a :class:`RaceLayout`.
        mask: ``[E]`` bools selecting the envs to write (default: all).

    Raises:
        KeyError: the generator has no ``"gates.pose"`` input.
        TypeError: ``layout`` is not a RaceLayout.
        ValueError: more gates than the input capacity ``num_gates``, a bad mask shape, or a
            randomized gate width or height (each generation would draw over the layout's).
        Nothing is written when it raises.
    """
    if "gates.pose" not in generator.inputs:
        raise KeyError('this generator has no "gates.pose" input: build it with GateGenConfig(source="layout")')
    if not isinstance(layout, RaceLayout):
        raise TypeError(f"layout must be a RaceLayout, got {type(layout).__name__}")
    drawn = [n for n in ("gate_frames.gate_width", "gate_frames.gate_height") if n in generator.params.randomize]
    if drawn:
        raise ValueError(f"{layout.name}: the generator randomizes {drawn}, so each generation would draw over the "
                         f"layout's gate size; build its spec with "
                         f"without_randomize({', '.join(repr(n) for n in drawn)})")
    pose, count = generator.inputs["gates.pose"], generator.inputs["gates.count"]
    num_envs, capacity = pose.shape
    if layout.num_gates > capacity:
        raise ValueError(f"{layout.name}: {layout.num_gates} gates, over the input capacity num_gates={capacity}")
    sel = np.ones(num_envs, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if sel.shape != (num_envs,):
        raise ValueError(f"mask must be [{num_envs}] bools, got shape {sel.shape}")
    rows = pose.numpy().reshape(num_envs, capacity, 7).copy()
    rows[sel] = 0.0
    rows[sel, :, 6] = 1.0  # unused slots: identity transforms
    rows[sel, : layout.num_gates, :3] = layout.position
    rows[sel, : layout.num_gates, 3:] = layout.orientation
    counts = count.numpy().copy()
    counts[sel] = layout.num_gates
    width = generator.params["gate_frames.gate_width"].numpy().astype(np.float64)
    height = generator.params["gate_frames.gate_height"].numpy().astype(np.float64)
    width[sel], height[sel] = layout.course_width, layout.course_height
    params = generator.params  # both checked before either is written (a refused height leaves the width)
    staged = [params.stage_set("gate_frames.gate_width", width), params.stage_set("gate_frames.gate_height", height)]
    for each in staged:
        params.commit(each)
    pose.assign(wp.array(rows.astype(np.float32), dtype=wp.transform, device="cpu"))
    count.assign(counts.astype(np.int32))
