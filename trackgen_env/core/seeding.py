"""Per-env seeds and counter-based random streams.

Env ``i``'s course is a pure function of ``(config, seed[i], counter[i], params[i])``.
Random numbers are drawn from a counter-based hash of ``(seed, counter, stream, index)``
(no sequential generator state is shared across envs), so a draw does not depend on the
number of envs, on the other envs, or on whether the call was eager or replayed.

The hash is Chris Wellons' ``lowbias32`` integer finaliser ("Prospecting for hash
functions", 2018), chained over the key words; uniform floats take its top 24 bits.

Ownership (spec, "Seeds and the rng"):

* an ``int`` seed ``s`` gives env ``i`` the seed ``env_seeds(s, E)[i] = hash(s, i)``
  (not ``s + i``: runs seeded 42 and 43 must not share courses);
* an ``[E] int32`` ``wp.array`` is *bound*: the library reads it and never writes it;
* a :class:`PerEnvSeededRNG` owns its array; a generator binds to it;
* a :class:`SeedState` is used as it is.
"""

from __future__ import annotations

import enum
import zlib

import numpy as np
import warp as wp

from .checks import check_env_array, check_int, check_seed

__all__ = [
    "SeedState",
    "PerEnvSeededRNG",
    "Stream",
    "ATTEMPT_STREAMS",
    "plugin_stage_stream",
    "env_seeds",
    "random_key",
    "uniform",
    "uniform_range",
]

wp.set_module_options({"enable_backward": False})


class Stream(enum.IntEnum):
    """The random stream ids (``random_key``'s ``stream``): one per consumer, so no two share draws.

    The values are part of every course's identity: changing one changes the courses.
    """

    #: a generator's layout stage; attempt ``a`` of the retry loop draws from
    #: ``LAYOUT * ATTEMPT_STREAMS + a``
    LAYOUT = 1
    #: ``with_randomize`` parameters: ``RANDOMIZE + offset``, the offset a built-in parameter declares
    #: (``Param.stream``) or a hash of a plugin parameter's name
    RANDOMIZE = 1 << 20
    #: the checkpoint sampler of ``tools.checkpoints`` ("CPKS")
    CHECKPOINT_SAMPLER = 0x43504B53
    #: the gates env's start-state draws (random-gate starts, their perturbation) ("GSTR")
    GATES_START = 0x47535452
    #: the track env's per-episode car draws (draw 0: ``friction_range``'s friction scale, 1:
    #: ``accel_range``'s motor scale, 2: ``steer_range``'s steering scale) ("CARP")
    CAR_PARAMS = 0x43415250
    #: the track env's random-start draws (``random_start``: heading error, start speed) ("TSTR")
    TRACK_START = 0x54535452
    #: ``tools.Lidar``'s range noise (scan ``k`` since the env's reset: the key hashed with ``k``) ("LIDR")
    LIDAR = 0x4C494452
    #: the race env's grid order (which car takes which slot, per episode) ("RGRD")
    RACE_GRID = 0x52475244
    #: a plugin stage's own draws, ``[PLUGIN_STAGES, 2**30)``: ``ATTEMPT_STREAMS`` ids per stage at a
    #: hash of its name (:func:`plugin_stage_stream`, ``Stage.random_stream``)
    PLUGIN_STAGES = 1 << 22


#: stream ids per stage for its retry attempts (``max_retries <= 64`` fits)
ATTEMPT_STREAMS = 256

_PLUGIN_STAGE_SLOTS = ((1 << 30) - int(Stream.PLUGIN_STAGES)) // ATTEMPT_STREAMS


def plugin_stage_stream(name: str) -> int:
    """The first of a plugin stage's own random streams: ``Stream.PLUGIN_STAGES`` plus
    ``ATTEMPT_STREAMS`` times a CRC-32 of its ``name``, modulo the 4,177,920 slots below ``2**30``.

    Raises:
        TypeError: ``name`` is not a str.

    Attempt ``a`` of the retry loop draws with ``random_key(seed, counter, stream + a)`` (``a <
    ATTEMPT_STREAMS``), as the built-in layout stages do from ``Stream.LAYOUT``, so a rejected draw
    is followed by a fresh one. The ids lie apart from every other consumer's (the other
    :class:`Stream` values, the parameters' ``[RANDOMIZE, 2 * RANDOMIZE)``), and depend on the name
    alone: adding a stage changes no other one's draws.
    """
    if not isinstance(name, str):
        raise TypeError(f"plugin_stage_stream takes a stage's name (a str), got {type(name).__name__} {name!r}")
    return int(Stream.PLUGIN_STAGES) + ATTEMPT_STREAMS * (zlib.crc32(name.encode()) % _PLUGIN_STAGE_SLOTS)


_GOLDEN = wp.constant(wp.uint32(0x9E3779B9))
_M1 = wp.constant(wp.uint32(0x7FEB352D))
_M2 = wp.constant(wp.uint32(0x846CA68B))
_S15 = wp.constant(wp.uint32(15))
_S16 = wp.constant(wp.uint32(16))
_S8 = wp.constant(wp.uint32(8))


@wp.func
def _lowbias32(x: wp.uint32) -> wp.uint32:
    x = x ^ (x >> _S16)
    x = x * _M1
    x = x ^ (x >> _S15)
    x = x * _M2
    x = x ^ (x >> _S16)
    return x


@wp.func
def random_key(seed: wp.int32, counter: wp.int32, stream: wp.int32) -> wp.uint32:
    """Key of one env's random stream: ``stream`` names the stage (and retry attempt)."""
    h = _lowbias32(wp.uint32(seed) ^ _GOLDEN)
    h = _lowbias32(h ^ wp.uint32(counter))
    return _lowbias32(h ^ wp.uint32(stream))


@wp.func
def uniform(key: wp.uint32, index: wp.int32) -> float:
    """Draw ``index`` of the stream ``key``: a float32 in [0, 1)."""
    h = _lowbias32(key ^ _lowbias32(wp.uint32(index) + _GOLDEN))
    return float(h >> _S8) * (1.0 / 16777216.0)


@wp.func
def uniform_range(key: wp.uint32, index: wp.int32, lo: float, hi: float) -> float:
    """Draw ``index`` of the stream ``key``: a float32 uniform in [lo, hi) (float32 rounding of
    ``lo + (hi - lo) * u`` can give ``hi`` itself)."""
    return lo + (hi - lo) * uniform(key, index)


def _lowbias32_np(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.uint32)
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def env_seeds(seed: int, num_envs: int) -> np.ndarray:
    """Per-env seeds ``hash(seed, i)`` for ``i in range(num_envs)``, shape ``[E]`` uint32.

    Non-negative, in ``[0, 2**32)``: the values ``reset(seed=[...])``, ``seeds=`` and
    :class:`PerEnvSeededRNG` take as given. The device seed arrays hold the same 32 bits as
    int32 (``env_seeds(s, E).view(np.int32)`` for an ``[E] int32`` array of your own).

    Raises:
        TypeError: ``seed`` is not an int.
        ValueError: ``seed`` is outside ``[0, 2**64)`` (:func:`~trackgen_env.core.checks.check_seed`).
    """
    seed = check_seed(seed, none=False)
    with np.errstate(over="ignore"):
        lo = _lowbias32_np(np.uint32(seed & 0xFFFFFFFF) ^ np.uint32(0x9E3779B9))
        hi = _lowbias32_np(np.uint32((seed >> 32) & 0xFFFFFFFF) ^ lo)
        for shift in range(64, seed.bit_length() + 32, 32):
            hi = _lowbias32_np(np.uint32((seed >> shift) & 0xFFFFFFFF) ^ hi)
        idx = np.arange(num_envs, dtype=np.uint32)
        out = _lowbias32_np(_lowbias32_np(idx + np.uint32(0x632BE5AB)) ^ hi)
    return out


@wp.kernel
def _advance(mask: wp.array(dtype=wp.int32), use_mask: int, counters: wp.array(dtype=wp.int32)):
    i = wp.tid()
    if use_mask == 0 or mask[i] != 0:
        counters[i] = counters[i] + 1


def _check_seed_array(arr: wp.array, num_envs: int, device) -> None:
    if not isinstance(arr, wp.array):
        raise TypeError(f"seeds must be an int, a wp.array, a PerEnvSeededRNG or a SeedState; got {type(arr).__name__}")
    check_env_array("a seed array", arr, num_envs, device)


class PerEnvSeededRNG:
    """Per-env seeds that the user owns and re-seeds: ``seeds`` is an ``[E] int32`` array.

    A generator given a ``PerEnvSeededRNG`` binds its :class:`SeedState` to ``rng.seeds``;
    ``seed(...)`` writes that array in place, so every graph that reads it sees the new seeds.

    Args:
        num_envs: number of envs ``E`` (> 0).
        seed: an int (env ``i`` gets ``hash(seed, i)``) or ``E`` ints. Default 0.
        device: Warp device (default: Warp's default device).
    """

    def __init__(self, num_envs: int, seed=0, *, device=None):
        self.num_envs = check_int("num_envs", num_envs, lo=1)
        self.device = wp.get_device(device)
        self.seeds = wp.zeros(self.num_envs, dtype=wp.int32, device=self.device)
        self.seed(seed)

    def seed(self, seed) -> None:
        """Write new per-env seeds: an int (hashed per env) or ``E`` ints (used as given)."""
        self.seeds.assign(_seed_values(seed, self.num_envs))

    def __repr__(self) -> str:
        return f"PerEnvSeededRNG(num_envs={self.num_envs}, device={self.device})"


def _seed_values(seed, num_envs: int) -> np.ndarray:
    """The ``[E]`` int32 device seeds of an int (hashed per env) or ``E`` per-env seeds (as given)."""
    seed = check_seed(seed, num_envs, name="seeds", none=False)
    return env_seeds(seed, num_envs).view(np.int32) if isinstance(seed, int) else seed.view(np.int32)


class SeedState:
    """Per-env seeds and generation counters of one generator.

    Attributes:
        seeds: ``[E] int32`` per-env seeds, owned by this state or bound to a user's array
            (``owned`` tells which).
        counters: ``[E] int32`` generation counters; ``advance(mask)`` increments the masked
            envs' counters so that their next course is new.
        rng: the :class:`PerEnvSeededRNG` whose array is bound, or None.

    Args:
        num_envs, device: the generator's.
        seeds: ``None`` (seed 0), an int (env ``i`` gets ``hash(seed, i)``), ``E`` ints (used
            as given; owned), an ``[E] int32`` ``wp.array`` (bound by pointer, never
            written), or a :class:`PerEnvSeededRNG` (bound to its array).

    Raises:
        TypeError / ValueError: a seeds value of another type, shape, dtype or device.
    """

    def __init__(self, num_envs: int, device=None, seeds=None):
        self.num_envs = int(num_envs)
        self.device = wp.get_device(device)
        self.rng: PerEnvSeededRNG | None = None
        if isinstance(seeds, PerEnvSeededRNG):
            _check_seed_array(seeds.seeds, self.num_envs, self.device)
            self.rng, self.seeds, self.owned = seeds, seeds.seeds, False
        elif isinstance(seeds, wp.array):
            _check_seed_array(seeds, self.num_envs, self.device)
            self.seeds, self.owned = seeds, False
        else:
            self.seeds = wp.array(_seed_values(0 if seeds is None else seeds, self.num_envs), dtype=wp.int32,
                                  device=self.device)
            self.owned = True
        self.counters = wp.zeros(self.num_envs, dtype=wp.int32, device=self.device)

    def set(self, seeds) -> None:
        """Write new seeds (an int or ``E`` ints) into owned seeds and zero the counters.

        Raises:
            RuntimeError: the seeds are bound to a user's array (write it yourself, or
                through its ``PerEnvSeededRNG``).
        """
        if not self.owned:
            raise RuntimeError(
                "these seeds are bound to your array; the library never writes it: "
                "write it (or use the PerEnvSeededRNG that owns it), then regenerate()"
            )
        self.seeds.assign(_seed_values(seeds, self.num_envs))
        self.counters.zero_()

    def reseed(self, seeds) -> None:
        """Set seeds through whoever owns them: the rng, else :meth:`set`; zero the counters."""
        if self.rng is not None:
            self.rng.seed(seeds)
            self.counters.zero_()
        else:
            self.set(seeds)

    def advance(self, mask: wp.array | None = None) -> None:
        """Increment the counters of the masked envs (all envs when ``mask`` is None). Capturable."""
        wp.launch(
            _advance,
            self.num_envs,
            inputs=[mask if mask is not None else self.counters, 0 if mask is None else 1],
            outputs=[self.counters],
            device=self.device,
        )

    def __repr__(self) -> str:
        return f"SeedState(num_envs={self.num_envs}, owned={self.owned}, rng={self.rng!r})"
