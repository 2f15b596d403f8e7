"""Live dynamic parameters of a built generator: ``generator.params["stage.param"]``.

Each parameter is an ``[E] float32`` device array written in place, so graphs that read it
see every change. A randomized parameter also has live ``[E]`` bounds that the generator
draws from for the regenerated envs (``draw``), before its stages run.
"""

from __future__ import annotations

import dataclasses
import decimal
import numbers
import warnings
import zlib
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import warp as wp

from ..core.capture import user_stacklevel
from ..core.checks import first_bad
from ..core.seeding import Stream, random_key, uniform_range
from .stage import DECLARED_STREAMS

__all__ = ["Params", "stream_id"]

wp.set_module_options({"enable_backward": False})

# Stream ids of the parameters that declare none (plugins): a hash of the name, above the
# declared offsets, so that adding a parameter changes no other one's draws.
_HASHED_BASE = DECLARED_STREAMS
_HASHED_SPAN = 1 << 19


def _is_number(x) -> bool:
    """A real number that is not a bool: an int, a float, a Fraction, a Decimal, a NumPy scalar."""
    return isinstance(x, (numbers.Real, decimal.Decimal)) and not isinstance(x, (bool, np.bool_))


def _refusal(exc: ValueError, check, name: str, stored: np.ndarray, given: np.ndarray) -> ValueError:
    """``exc`` (``check``'s refusal of the ``stored`` float32 values) as the caller's error; when
    float32 caused it (the ``given`` numbers pass), it says so: ``"... (given 1e-50, which float32
    stores as 0)"``, or for ``[E]`` values ``"... (env 3 was given 1e-50, ...)"`` about the env whose
    given value alone makes the stored ones pass (else the first that float32 changed by more than
    its rounding), in place of the refusal's own ``" (env 3)"``."""
    message = str(exc)
    try:
        check(name, given)
    except ValueError:
        return ValueError(message)  # refused as given too: the message is about the given numbers
    if np.ndim(given) == 0:
        return ValueError(message + _stored_note("given", float(given), float(stored)))
    env = None
    for i in np.flatnonzero(stored != given):
        trial = stored.copy()
        trial[i] = given[i]
        try:
            check(name, trial)
        except ValueError:
            continue
        env = int(i)
        break
    if env is None:
        changed = np.flatnonzero(~np.isclose(stored, given, rtol=1e-6, atol=0.0))  # more than rounding
        if changed.size == 0:
            return ValueError(message)
        env = int(changed[0])
    message = message.removesuffix(f" (env {env})")  # said once, in the note
    return ValueError(message + _stored_note(f"env {env} was given", float(given[env]), float(stored[env])))


def check_as_stored(param, what: str, value) -> None:
    """Check ``value`` (a number) against ``param``'s bounds as a float32 array stores both, as a live
    set is checked: a construction value or randomize end of 1e-46 is stored as 0 and refused
    where 0 is; ``pi / 4`` meets ``[0, pi / 4]``.

    Raises:
        ValueError: :meth:`Param.check`'s, with ``" (given 1e-46, which float32 stores as 0)"`` when
            float32 caused the refusal.
    """
    given = np.asarray(value, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        stored = given.astype(np.float32).astype(np.float64)

    def check(what, values):
        param.check(what, values, float32=True)

    try:
        check(what, stored)
    except ValueError as exc:
        raise _refusal(exc, check, what, stored, given) from None


def _stored_note(who: str, given: float, stored: float) -> str:
    """``" (given 1e-50, which float32 stores as 0)"``, with the digits that tell the two apart."""
    a, b = f"{given:g}", f"{stored:g}"
    if a == b:  # a rounding: 0.20000001 stored as 0.2
        a, b = f"{given:.9g}", f"{stored:.9g}"
    return f" ({who} {a}, which float32 stores as {b})"


def parse_values(what: str, value, num_envs: int) -> tuple[np.ndarray, np.ndarray]:
    """``value`` (a number, or ``num_envs`` numbers: a sequence, an array, a ``wp.array``) as float64
    numbers, a scalar or ``[E]``: ``(stored, given)``, the float32 values an ``[E]`` float32 array
    will hold and the numbers given.

    Raises:
        TypeError: not a number or numbers (a str, a bool, a ragged list). ValueError: another
            length, not finite, or beyond float32; each message names ``what``.
    """
    want = f"{what} takes a number or {num_envs} numbers"
    try:
        raw = value.numpy() if isinstance(value, wp.array) else np.asarray(value)
    except ValueError:  # a ragged list
        raise TypeError(f"{want}, got {type(value).__name__} {value!r}") from None
    except (RuntimeError, TypeError) as exc:  # a torch tensor that requires grad, or on a GPU: NumPy cannot read it
        raise TypeError(f"{want}, got {type(value).__name__} that NumPy cannot read ({exc})") from None
    if raw.dtype == object and all(_is_number(x) for x in raw.ravel()):
        try:  # Python ints beyond float64, Fractions, Decimals: numbers, as floats
            raw = np.asarray([float(x) for x in raw.ravel()], dtype=np.float64).reshape(raw.shape)
        except OverflowError:
            raise ValueError(f"{what} must be finite, got an int beyond the float range") from None
    # a real dtype only: bools (True read as 1.0), strings ("wide") and objects are refused
    if raw.dtype == np.bool_ or not (np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)):
        raise TypeError(f"{want}, got {type(value).__name__} {value!r}")
    if raw.shape not in ((), (num_envs,)):
        raise ValueError(f"{want}, got shape {raw.shape}")
    values = raw.astype(np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what} must be finite, got {first_bad(values, ~np.isfinite(values))}")
    # the checks see what the [E] float32 array will hold: 1e39 would be stored as inf, 1e-50 as 0
    with np.errstate(over="ignore", under="ignore"):
        stored = values.astype(np.float32)
    if not np.all(np.isfinite(stored)):
        raise ValueError(f"{what} must fit a float32 (|v| < 3.4e38), got {first_bad(values, ~np.isfinite(stored))}")
    return stored.astype(np.float64), values


def randomized_refusal(name: str, lo: float, hi: float) -> ValueError:
    """The error of a set of a randomized parameter, whose range is now within ``[lo, hi]``."""
    return ValueError(
        f"params[{name!r}] is randomized: each generation of an env draws it from its range "
        f"(now within [{lo:g}, {hi:g}]), which would overwrite a set before any generation read it; "
        f"move the range with params.set_range({name!r}, lo, hi), or build the spec with "
        f"without_randomize({name!r}) to set it directly")


def not_randomized_refusal(name: str, randomized) -> ValueError:
    """The error of a ``set_range`` of a parameter that is not randomized."""
    return ValueError(f"params[{name!r}] is not randomized (randomized: {sorted(randomized)}): set "
                      f"params[{name!r}] = value, or build the spec with with_randomize to draw it")


def stream_id(name: str, param) -> int:
    """The random stream of a randomized parameter: ``Stream.RANDOMIZE`` + its declared
    offset, or + a CRC-32 of its full name (stable across runs and specs)."""
    offset = param.stream if param.stream is not None else _HASHED_BASE + zlib.crc32(name.encode()) % _HASHED_SPAN
    return int(Stream.RANDOMIZE) + offset


@wp.kernel
def _draw(
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.int32),
    use_mask: int,
    stream: int,
    lo: wp.array(dtype=float),
    hi: wp.array(dtype=float),
    value: wp.array(dtype=float),
):
    e = wp.tid()
    if use_mask != 0 and mask[e] == 0:
        return
    key = random_key(seeds[e], counters[e], stream)
    value[e] = uniform_range(key, 0, lo[e], hi[e])


@dataclasses.dataclass(frozen=True)
class Staged:
    """A checked set, not yet written: ``writes`` ``[(array, [E] float32 values)]`` and the
    ``notices`` to warn when it is (see :meth:`Params.stage_set`)."""

    writes: list
    notices: list


class Params(Mapping):
    """``name -> [E] float32 wp.array`` of a generator's dynamic fields.

    ``params[name] = v`` writes in place: ``v`` a number (every env) or ``E`` numbers.
    A randomized parameter is drawn from its live ``(lo, hi)`` range at each generation of
    an env, so it is not set but moved: ``set_range(name, lo, hi)``. ``randomize[name]``
    holds those ``(lo, hi)`` ``[E] float32`` arrays (a read-only mapping: read them, move them
    with ``set_range``). Every check runs on the float32 values that would be stored. The arrays
    are the live ones a recorded graph reads (by pointer): writing into them directly
    (``.assign``, a kernel) skips every check, so set them through this mapping.

    Raises:
        KeyError: an unknown name (the message lists the parameters), or a static one (the
            message says so: it is fixed at build, rebuild with ``spec.with_params``).
        TypeError: a value that is not a number or numbers (a str, a bool).
        ValueError: a value of the wrong length, not finite, or out of the declared bounds;
            a set of a randomized parameter (its next draw would overwrite it before any
            generation read it).
    """

    def __init__(self, num_envs: int, device, declared: Mapping, values: Mapping, randomize: Mapping):
        """``declared``: ``"stage.param" -> Param`` (the dynamic ones become arrays); ``values``:
        their construction values; ``randomize``: ``name -> (lo, hi)``."""
        self.num_envs = num_envs
        self.device = wp.get_device(device)
        dynamic = {name: p for name, p in declared.items() if p.dynamic}
        self._static = frozenset(name for name, p in declared.items() if not p.dynamic)
        self._validators: dict[str, list] = {name: [p.check_set] for name, p in dynamic.items()}
        self._arrays = {
            name: wp.full(num_envs, float(values[name]), dtype=wp.float32, device=self.device) for name in dynamic
        }
        # read-only: a range moves through set_range, which checks it
        self._randomize = MappingProxyType({
            name: (
                wp.full(num_envs, lo, dtype=wp.float32, device=self.device),
                wp.full(num_envs, hi, dtype=wp.float32, device=self.device),
            )
            for name, (lo, hi) in randomize.items()
        })
        self._streams = {name: stream_id(name, p) for name, p in dynamic.items()}
        self._released: str | None = None  # why every use is refused (release)
        #: how many sets and range moves were committed (an env's first plain reset compares it
        #: with its construction's count: a change since means those courses are out of date)
        self.commits = 0
        clash = sorted(n for n in self._streams if list(self._streams.values()).count(self._streams[n]) > 1)
        if clash:
            offsets = {n: self._streams[n] - int(Stream.RANDOMIZE) for n in clash}
            raise ValueError(
                f"parameters {clash} share a random stream (offsets {offsets}): give one another Param.stream offset "
                f"in "
                f"[0, {DECLARED_STREAMS}) that no other parameter of the spec declares, or stream=None (a hash of its "
                f"name; two hashed ones that meet: rename one)")

    def release(self, why: str) -> None:
        """Refuse every later read and write with RuntimeError(``why``): what an env's ``close()``
        calls on its generator's parameters, whose arrays it frees (a set would change nothing)."""
        self._released = why

    def _check_open(self) -> None:
        if self._released is not None:
            raise RuntimeError(self._released)

    @property
    def randomize(self) -> Mapping:
        """``name -> (lo, hi)``: the live ``[E] float32`` range arrays of each randomized
        parameter (read-only: moved by :meth:`set_range`)."""
        self._check_open()
        return self._randomize

    def __getitem__(self, name: str) -> wp.array:
        self._check_open()
        if name not in self._arrays:
            if name in self._static:
                raise KeyError(f"parameter {name!r} is static (dynamic=False): fixed at build, it has no live value; "
                               f"rebuild with spec.with_params({{{name!r}: value}}). The live parameters are "
                               f"{sorted(self._arrays)}")
            raise KeyError(f"unknown parameter {name!r}; parameters: {sorted(self._arrays)}")
        return self._arrays[name]

    def __iter__(self):
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __setitem__(self, name: str, value) -> None:
        self.commit(self.stage_set(name, value))

    def stage_set(self, name: str, value) -> Staged:
        """Check ``params[name] = value`` and return what it would write, writing nothing
        (:meth:`commit` writes it); the errors of a set. A caller that sets several
        :class:`Params` at once (the shards of a ``ShardedVectorEnv``) stages each, then commits."""
        arr = self[name]
        if name in self.randomize:
            lo, hi = self.randomize[name]
            raise randomized_refusal(name, float(lo.numpy().min()), float(hi.numpy().max()))
        values, given = parse_values(f"params[{name!r}]", value, self.num_envs)
        notices = self._check(name, (values, given))
        return Staged([(arr, self._row(values))], notices)

    def set_range(self, name: str, lo, hi) -> None:
        """Move the range a randomized parameter is drawn from, for the later generations.

        Each of ``lo``, ``hi`` is a number (every env) or ``E`` numbers. Both ends meet the
        checks a set of ``params[name]`` would: the declared bounds, an ordered pair against
        the other parameter's live range or value, and the checks a stage or env adds (a
        capacity such as ``layout.num_turns``'s, a track env's car width; a flat track's loop
        length against ``max_points`` warns). A refused range leaves the old one in place.
        What a course sized at construction (a height field's square, an SDF grid) is not
        checked again: build it for the final range (``size_hi=``).

        Raises:
            KeyError: an unknown or static name. ValueError: ``name`` is not randomized (set
            ``params[name]`` instead), ``lo > hi`` in some env, or an end that a set would refuse.
            TypeError: an end that is not a number or numbers.
        """
        self.commit(self.stage_range(name, lo, hi))

    def stage_range(self, name: str, lo, hi) -> Staged:
        """Check ``set_range(name, lo, hi)`` and return what it would write, writing nothing
        (see :meth:`stage_set`); the errors of :meth:`set_range`."""
        self[name]  # KeyError for an unknown or static name
        if name not in self.randomize:
            raise not_randomized_refusal(name, self.randomize)
        low, low_given = parse_values(f"set_range({name!r}) lo", lo, self.num_envs)
        high, high_given = parse_values(f"set_range({name!r}) hi", hi, self.num_envs)
        lows, highs = (np.broadcast_to(v, (self.num_envs,)) for v in (low, high))
        if np.any(lows > highs):
            bad = int(np.argmax(lows > highs))
            where = "" if low.ndim == 0 and high.ndim == 0 else f" in env {bad}"
            raise ValueError(f"set_range({name!r}) needs lo <= hi, got ({lows[bad]:g}, {highs[bad]:g}){where}")
        notices = self._check(name, (low, low_given), (high, high_given), ends=("lo", "hi"))
        return Staged([(arr, self._row(v)) for arr, v in zip(self.randomize[name], (low, high))], notices)

    def commit(self, staged: Staged) -> None:
        """Write what :meth:`stage_set` / :meth:`stage_range` checked, and warn its notices
        (a UserWarning each, at the user's line)."""
        for arr, values in staged.writes:
            arr.assign(values)
        self.commits += 1
        for notice in staged.notices:  # at the user's line: once per line under the default filter
            warnings.warn(notice, UserWarning, stacklevel=user_stacklevel())

    def _row(self, values: np.ndarray) -> np.ndarray:
        return np.broadcast_to(values, (self.num_envs,)).astype(np.float32)

    def _check(self, name: str, *values_given: tuple[np.ndarray, np.ndarray], ends=None) -> list[str]:
        """Run every validator of ``name`` on each of ``values_given`` (``(stored, given)`` pairs from
        :func:`parse_values`); return the notices they return, once each (a refused set warns nothing).
        A refusal that float32 caused (1e-50 stored as 0) says what was given; ``ends`` names each
        pair in a refusal (a range's ``"lo"`` and ``"hi"``)."""
        notices: list[str] = []
        for k, (values, given) in enumerate(values_given):
            for check in self._validators.get(name, ()):
                try:
                    notice = check(name, values)
                except ValueError as exc:
                    refusal = _refusal(exc, check, name, values, given)
                    if ends is not None:
                        refusal = ValueError(f"set_range({name!r}) {ends[k]}: {refusal}")
                    raise refusal from None
                if notice and notice not in notices:  # the same notice of both ends: once
                    notices.append(notice)
        return notices

    def least(self, name: str) -> np.ndarray:
        """``[E]`` float64: the least value of ``name`` a later generation can use (its range's
        lo when randomized, else its present value)."""
        return (self.randomize[name][0] if name in self.randomize else self[name]).numpy().astype(np.float64)

    def most(self, name: str) -> np.ndarray:
        """``[E]`` float64: the largest value of ``name`` a later generation can use (its range's
        hi when randomized, else its present value)."""
        return (self.randomize[name][1] if name in self.randomize else self[name]).numpy().astype(np.float64)

    def add_validator(self, name: str, check) -> None:
        """Run ``check(name, values)`` on every later set of ``name`` and on both ends of every
        later :meth:`set_range` (``values``: float64, a scalar or ``[E]``, as float32 will store them).

        ``check`` raises ValueError to refuse (nothing is written), or returns a str to warn
        (a UserWarning at the caller's line, once per set, only when no check refused), or None.
        After a refusal it may be called again with the given numbers (float64, unrounded) to
        tell whether float32 caused it, for the message.
        Adding the same ``check`` twice keeps one.
        """
        self[name]  # KeyError for an unknown name
        checks = self._validators.setdefault(name, [])
        if check not in checks:
            checks.append(check)

    def draw(self, seeds, mask: wp.array | None) -> None:
        """Draw every randomized parameter for the masked envs (capturable)."""
        for name, (lo, hi) in self.randomize.items():
            wp.launch(
                _draw,
                self.num_envs,
                inputs=[seeds.seeds, seeds.counters, mask if mask is not None else seeds.counters, 0 if mask is None
                        else 1,
                        self._streams[name], lo, hi],
                outputs=[self._arrays[name]],
                device=self.device,
            )
