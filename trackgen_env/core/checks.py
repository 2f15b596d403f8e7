"""Argument checks every layer uses (layer 0): each error says what was expected and what was received.

Wrong types raise ``TypeError``, wrong values (range, shape, dtype, device) ``ValueError``,
as Gymnasium's envs do. Each check returns the value normalised (a Python ``int``/``float``,
a tuple, a device name), so a config stores what it checked.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
import warp as wp

from .warp_log import init_warp

__all__ = ["check_seed", "fold_seed", "SEED_BITS", "check_bool", "check_int", "check_range", "refused_env",
           "check_num_envs", "check_float", "check_vec3", "dtype_name", "check_env_array", "check_mask",
           "values_in_range", "first_bad", "resolve_device",
           "install_hint"]


def _range(lo, hi) -> str:
    if hi is None:
        return f">= {lo}"
    if lo is None:
        return f"<= {hi}"
    return f"in [{lo}, {hi}]"


def check_int(name: str, value, *, lo: int | None = None, hi: int | None = None) -> int:
    """An int (not a bool) in ``[lo, hi]`` (either bound optional) -> ``int``.

    Raises:
        TypeError: not an int.
        ValueError: out of range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{name} must be {_range(lo, hi)}, got {value}")
    return int(value)


#: A seed is an int in ``[0, 2**SEED_BITS)``: what NumPy's ``SeedSequence``, ``torch.manual_seed``
#: and Gymnasium's ``reset(seed=...)`` take. Per-env seeds (used as given) are ints in ``[0, 2**32)``:
#: the device holds 32 bits per env.
SEED_BITS = 64


def check_seed(seed, num_envs: int | None = None, *, name: str = "seed", none: bool = True):
    """The one seed rule of the library (envs, generators, trainers, the command line).

    Accepts None (when ``none``), an int in ``[0, 2**64)``, and, where ``num_envs`` is given,
    ``num_envs`` per-env seeds: ints in ``[0, 2**32)`` (a list, a tuple, a NumPy array or a
    ``wp.array``; an int32 array is read as the 32 bits the device holds, as
    ``env_seeds(s, E).view(np.int32)`` writes them).

    Returns:
        None, the seed as a Python int, or the per-env seeds as an ``[E]`` uint32 array.

    Raises:
        TypeError: no int (a float, a str, a bool), or per-env seeds that are not ints.
        ValueError: an int outside ``[0, 2**64)``; per-env seeds of another count or outside ``[0, 2**32)``.
    """
    per_env = "" if num_envs is None else (
        f", or {'a list of 1 int' if num_envs == 1 else f'{num_envs} ints'} in [0, 2**32) (one per env)")
    expected = f"{name} must be {'None, ' if none else ''}an int in [0, 2**{SEED_BITS}){per_env}"
    if seed is None and none:
        return None
    if num_envs is not None and isinstance(seed, (list, tuple, np.ndarray, wp.array)):
        values = seed.numpy() if isinstance(seed, wp.array) else np.asarray(seed)
        if values.dtype == np.int32:  # the device's own form: the same 32 bits
            values = values.view(np.uint32)
        if values.size and not np.issubdtype(values.dtype, np.integer):
            raise TypeError(f"{expected}, got {seed!r} (dtype {values.dtype})")
        if values.shape != (num_envs,) or values.min(initial=0) < 0 or values.max(initial=0) >= 1 << 32:
            raise ValueError(f"{expected}, got {seed!r}")
        return values.astype(np.uint32)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{expected}, got {type(seed).__name__} {seed!r}")
    if not 0 <= seed < 1 << SEED_BITS:
        raise ValueError(f"{expected}, got {seed!r}")
    return int(seed)


def fold_seed(seed: int) -> int:
    """A checked seed folded into 32 bits (its 32-bit halves xor-ed; the seed itself below ``2**32``),
    for the consumers that take no more: NumPy's global ``np.random.seed`` (SB3's ``set_random_seed``)."""
    seed = check_seed(seed, none=False)
    return (seed ^ (seed >> 32)) & 0xFFFFFFFF


def check_range(name: str, value, lo: float, hi: float | None = None, *, lo_open: bool = False,
                none: bool = False, what: str = "") -> tuple[float, float] | None:
    """A ``(lo, hi)`` pair of floats, each ``>= lo`` (``> lo`` with ``lo_open``) and ``<= hi`` when
    given, the first ``<=`` the second; with ``none``, None too (returned as is). ``what`` follows
    "pair" in the message (``" of friction scales"``).

    Raises:
        TypeError: not a pair (a tuple or list of two), nor None where ``none``. ValueError: a bound
            out of range, or ``lo > hi``.
    """
    if value is None and none:
        return None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be {'None or ' if none else ''}a (lo, hi) pair{what}, got {value!r}")
    low = check_float(f"{name}[0]", value[0], lo=lo, hi=hi, lo_open=lo_open)
    high = check_float(f"{name}[1]", value[1], lo=lo, hi=hi, lo_open=lo_open)
    if low > high:
        raise ValueError(f"{name} needs lo <= hi, got ({low}, {high})")
    return (low, high)


def check_num_envs(value) -> int:
    """A number of envs ``E``: an int >= 1 (the envs' constructors and memory estimates share it).

    Raises:
        TypeError: not an int. ValueError: < 1.
    """
    return check_int("num_envs", value, lo=1)


def check_bool(name: str, value) -> bool:
    """``value`` as a bool: a Python or NumPy bool only (not ``"yes"``, None or 1).

    Raises:
        TypeError: anything else, naming ``name`` and the value.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def check_float(name: str, value, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> float:
    """A finite real number (not a bool) ``>= lo`` (``> lo`` with ``lo_open``) and ``<= hi`` -> ``float``.

    Raises:
        TypeError: not a real number.
        ValueError: NaN, infinite, or out of range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    try:
        value = float(value)
    except OverflowError:  # an int past float64's range (Python ints have no bound)
        raise ValueError(f"{name} must be finite, got an int of {value.bit_length()} bits, "
                         "past float64's range") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if lo is not None and (value <= lo if lo_open else value < lo):
        raise ValueError(f"{name} must be {'>' if lo_open else '>='} {lo}, got {value}")
    if hi is not None and value > hi:
        raise ValueError(f"{name} must be <= {hi}, got {value}")
    return value


def check_vec3(name: str, value, *, lo: float | None = None, lo_open: bool = False) -> tuple[float, float, float]:
    """Three numbers, each checked as :func:`check_float` (``name[i]`` in the message) -> a tuple.

    Raises:
        TypeError: not a sequence of 3, or an element that is not a number.
        ValueError: an element that is not finite or out of range.
    """
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 3:
        raise TypeError(f"{name} must be 3 numbers, got {value!r}")
    return tuple(check_float(f"{name}[{i}]", v, lo=lo, lo_open=lo_open) for i, v in enumerate(value))


def dtype_name(dtype) -> str:
    """A Warp dtype's short name for a message (``int32``, ``vec3f``, ``bool``; Warp's own
    ``type_repr`` gives its module path for ``wp.bool``)."""
    return "bool" if dtype is wp.bool else wp.types.type_repr(dtype)


def check_env_array(name: str, value, num_envs: int, device, dtype=wp.int32) -> wp.array:
    """A ``[num_envs]`` ``wp.array`` of ``dtype`` on ``device`` (an array per env), returned as is.

    Raises:
        TypeError: not a ``wp.array``.
        ValueError: another shape, dtype or device.
    """
    dev = wp.get_device(device)
    what = f"a [{num_envs}] {dtype_name(dtype)} wp.array on {dev}"
    if not isinstance(value, wp.array):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    if value.dtype != dtype or tuple(value.shape) != (num_envs,) or value.device != dev:
        raise ValueError(
            f"{name} must be {what}, got shape {tuple(value.shape)} dtype {dtype_name(value.dtype)} "
            f"on {value.device}"
        )
    return value


def check_mask(mask, num_envs: int, device, *, name: str = "mask") -> wp.array | None:
    """None (every env) or an env mask: a ``[num_envs]`` int32 ``wp.array`` on ``device``, nonzero = selected.

    Raises:
        TypeError: neither None nor a ``wp.array``.
        ValueError: another shape, dtype or device.
    """
    return None if mask is None else check_env_array(name, mask, num_envs, device)


def values_in_range(lo: float | None = None, hi: float | None = None, lo_open: bool = False):
    """A validator of per-env values (``Params.add_validator``): ``check(name, values)`` raises
    ValueError naming the first value outside ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``)."""

    def check(name: str, values: np.ndarray) -> None:
        bad = (values <= lo if lo_open else values < lo) if lo is not None else np.zeros(values.shape, bool)
        if hi is not None:
            bad = bad | (values > hi)
        if np.any(bad):
            rng = (f"{'>' if lo_open else '>='} {lo}" if hi is None else f"in [{lo}, {hi}]")
            raise ValueError(f"params[{name!r}] must be {rng}, got {np.asarray(values)[bad].ravel()[0]}")

    return check


def first_bad(values, bad, unit: str = "") -> str:
    """The first refused value of a live set, for a message: ``"0.15 m"`` for a scalar set,
    ``"0.15 m (env 1)"`` for a per-env one (``bad``: the refused entries, True where refused)."""
    v, bad = np.asarray(values), np.asarray(bad)
    if v.ndim == 0:
        return f"{float(v):g}{unit}"
    e = int(np.flatnonzero(bad)[0])
    return f"{float(v.ravel()[e]):g}{unit} (env {e})"


def refused_env(bad) -> tuple[int, str]:
    """``(e, where)`` for a refusal of ``[E]`` values (``bad``: True where refused): the first refused
    env, and ``" in env e"`` for the message, or ``""`` when every env is refused."""
    bad = np.asarray(bad)
    e = int(np.flatnonzero(bad)[0])
    return e, "" if np.all(bad) else f" in env {e}"


def resolve_device(device=None) -> str:
    """A Warp device name: ``None`` means ``"cuda:0"`` when Warp sees a GPU, else ``"cpu"``.

    Also takes a ``wp.Device``, a ``torch.device`` (``torch.device("cuda", 1)`` is ``"cuda:1"``) and
    a name in any case (``"CPU"``, ``"CUDA:0"``).

    Raises:
        ValueError: ``device`` names no device Warp knows (the message lists them).
    """
    init_warp()  # the library's first device query starts Warp, without its no-driver warning
    if device is None:
        return "cuda:0" if wp.get_cuda_device_count() > 0 else "cpu"
    if type(device).__module__ == "torch" and type(device).__name__ == "device":  # without importing torch
        device = device.type if device.index is None else f"{device.type}:{device.index}"
    if isinstance(device, str):
        device = device.strip().lower()
    names = [str(d) for d in wp.get_devices()]
    if isinstance(device, str) and device.startswith("cuda") and wp.get_cuda_device_count() == 0:
        # Warp would print driver errors before refusing a bare "cuda" on a machine without a GPU
        raise ValueError(f"device must be one of {names} or None (Warp sees no CUDA device), got {device!r}")
    try:
        return str(wp.get_device(device))
    except Exception as exc:  # Warp raises RuntimeError/ValueError depending on the name
        raise ValueError(f"device must be one of {names} or None, got {device!r}") from exc


def install_hint(extra: str) -> str:
    """How to install the optional dependencies of ``extra`` (a ``pyproject.toml`` extra), for the
    message of an ImportError: the README installs from a source checkout, so its form comes first."""
    return f'pip install -e ".[{extra}]" in a source checkout (else pip install "trackgen_env[{extra}]")'
