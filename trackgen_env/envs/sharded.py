"""``ShardedVectorEnv``: one vector env split over worker threads, one shard per CPU core.

Warp runs a CPU kernel on one thread. A shard is an env of its own (its own buffers and
recorded step graph) over a contiguous slice of the envs. Warp calls its native library
through ``ctypes.CDLL``, which releases the GIL for the call, so the shards' graph replays
(the kernels) run in parallel; ``benchmarks/run.py`` measures the scaling (``benchmarks/NOTES.md``).

A step holds the GIL as little as the work allows, since whatever a shard does under it
waits for the other shards: the actions are checked once for all envs; each shard then,
in its own persistent thread (shard 0 in the caller's), clips its rows of the actions
into its action buffer, replays its graph and copies its outputs into its rows of one
fresh set of output arrays, each a single NumPy or Warp call that releases the GIL for
the work itself (:meth:`~trackgen_env.envs.base.CourseVectorEnv.step_into`). Nothing is
concatenated; the info dict is built once over all envs. A thread that finds no free core to
start on leaves its shard to the threads that did (the caller's included), so on a loaded
machine a step is not held up by a thread that has not started.

The shards are seeded so that the sharded env equals one env of the same seeds: an int
seed ``s`` gives env ``i`` the seed ``env_seeds(s, num_envs)[i]`` exactly as one env does
(:func:`~trackgen_env.seeding.env_seeds`), so every course, start and output is the same,
env for env, as ``gymnasium.make_vec(env_id, num_envs, seed=s)``.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import re
import threading
import warnings
import weakref
from collections.abc import Mapping
from types import MappingProxyType

import gymnasium
import numpy as np
from gymnasium.vector.utils import batch_space

from ..core.checks import check_int, check_seed
from ..pipeline.program import RESET_MIN_INVALID, FewValidCoursesWarning
from ..pipeline.params import not_randomized_refusal, parse_values, randomized_refusal
from ..core.seeding import env_seeds
from .base import CourseVectorEnv, EnvMetadata, SharedEnvCalls
from .io import check_actions
from .lifecycle import ReadOnlyAfterConstruction

__all__ = ["ShardedVectorEnv"]


def _shard_seeds(seed, num_envs: int, bounds) -> list:
    """Per-shard seed lists of an int seed, ``num_envs`` ints, or None (one int drawn from the OS).

    Raises:
        TypeError, ValueError: a seed one env of ``num_envs`` would refuse
            (:func:`~trackgen_env.core.checks.check_seed`).
    """
    seed = check_seed(seed, num_envs)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**31))
    per_env = env_seeds(seed, num_envs) if isinstance(seed, int) else seed
    return [[int(x) for x in per_env[a:b]] for a, b in bounds]


def _check_no_window(render_mode) -> None:
    """Refuse ``render_mode="human"``: each shard would show its own envs in the one window."""
    if render_mode == "human":
        raise ValueError('ShardedVectorEnv offers no render_mode="human" (its shards would each show their own '
                         'envs in the one window): use render_mode="rgb_array" and show render_frames(k), or watch '
                         'a separate env built with render_mode="human"')


class _Workers:
    """Runs ``job(k)`` for ``k`` in ``range(num_jobs)`` on the caller's thread and ``num_jobs - 1``
    persistent daemon threads, and returns when all are done.

    Every thread, the caller's included, takes the next job index from one shared iterator
    (its ``next`` is atomic under the GIL) until none is left, so a thread that is late (no
    free core to wake it on) leaves its job to the others: on a loaded machine the step falls
    back toward the caller running every shard, never waiting for a thread that has not
    started. The caller then waits only for the jobs the threads took (a lock per job, released
    when it is done). A handover holds the GIL for a few microseconds (a ``SimpleQueue`` put
    and get, C-level locks), against tens for a ``ThreadPoolExecutor.map``. The threads hold no
    reference to the env, so an env dropped without ``close()`` is still collected (a
    finalizer stops its threads).
    """

    def __init__(self, num_jobs: int):
        self.num_jobs = num_jobs
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._broken = False
        self._threads = [threading.Thread(target=self._serve, name=f"trackgen-shard-{k}", daemon=True)
                         for k in range(1, num_jobs)]
        for thread in self._threads:
            thread.start()

    def _serve(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            _take(*task)  # a task of a finished run finds its iterator empty
            del task  # keep nothing of a run alive between runs

    def check_whole(self) -> None:
        """Raises RuntimeError when an earlier run was interrupted while a thread ran a job of it."""
        if self._broken:
            raise RuntimeError("an earlier step was interrupted while the shards ran (a thread may still be stepping "
                               "its shard): build a new env")

    def run(self, job) -> None:
        """``job(k)`` for every ``k`` at once; re-raises the first exception a job raised (all jobs ran)."""
        self.check_whole()
        n = self.num_jobs
        indices, errors, done = iter(range(n)), [None] * n, [threading.Lock() for _ in range(n)]
        for lock in done:
            lock.acquire()
        task = (indices, job, errors, done)
        for _ in self._threads:
            self._tasks.put(task)
        mine = _take(*task)
        try:  # every job is taken now: wait for the ones the threads took
            for k in range(n):
                if k not in mine:
                    done[k].acquire()
        except BaseException:  # interrupted while a thread still runs a job of this run
            self._broken = True
            raise
        for exc in errors:
            if exc is not None:
                raise exc

    def close(self) -> None:
        """Stop the threads (idempotent)."""
        threads, self._threads = self._threads, []
        for _ in threads:
            self._tasks.put(None)
        for thread in threads:
            thread.join()


def _take(indices, job, errors, done) -> list[int]:
    """Run ``job(k)`` for each ``k`` taken from the shared ``indices`` until none is left; returns the ``k`` run."""
    taken = []
    for k in indices:
        taken.append(k)
        try:
            job(k)
        except BaseException as exc:  # handed to the caller of run()
            errors[k] = exc
        done[k].release()
    return taken


class ShardedParams(Mapping):
    """The live parameters of every shard as one env's: ``name -> [E] float32`` (a NumPy copy).

    ``params[name] = v`` and ``set_range(name, lo, hi)`` take what one env's
    ``course.generator.params`` takes (a number, or ``E`` numbers, split into each shard's rows)
    and refuse what it refuses, with its error and message (an env numbered in the whole). Every
    shard checks its rows before any is written: a refused value leaves every shard as it was.

    Raises:
        KeyError / TypeError / ValueError: as :class:`~trackgen_env.pipeline.params.Params`.
        RuntimeError: any read or write after the env's ``close()`` (each shard's close releases
            its ``Params``: ``Params.release``).
    """

    def __init__(self, shards: list, bounds: list[tuple[int, int]]):
        self._params = [shard.course.generator.params for shard in shards]
        self._bounds = bounds
        self.num_envs = bounds[-1][1]

    def __getitem__(self, name: str) -> np.ndarray:
        # read-only, as one env's view: an item written into a copy would change nothing
        return _read_only(np.concatenate([p[name].numpy() for p in self._params]))

    def __iter__(self):
        return iter(self._params[0])

    def __len__(self) -> int:
        return len(self._params[0])

    @property
    def randomize(self) -> Mapping:
        """``name -> (lo, hi)``: the live ranges of the randomized parameters, ``[E] float32``
        NumPy copies over every shard (move them with :meth:`set_range`)."""
        return MappingProxyType({
            name: tuple(_read_only(np.concatenate([p.randomize[name][i].numpy() for p in self._params]))
                        for i in (0, 1))
            for name in self._params[0].randomize})

    def __setitem__(self, name: str, value) -> None:
        first = self._params[0]
        first[name]  # the checks in one env's order: the name, randomized, the value's form, its rows
        if name in first.randomize:
            lo, hi = self.randomize[name]
            raise randomized_refusal(name, float(lo.min()), float(hi.max()))
        _, given = parse_values(f"params[{name!r}]", value, self.num_envs)
        self._set(lambda p, a, b: p.stage_set(name, _rows(given, a, b)))

    def set_range(self, name: str, lo, hi) -> None:
        """Move a randomized parameter's range in every shard (see ``Params.set_range``)."""
        first = self._params[0]
        first[name]
        if name not in first.randomize:
            raise not_randomized_refusal(name, first.randomize)
        _, low = parse_values(f"set_range({name!r}) lo", lo, self.num_envs)
        _, high = parse_values(f"set_range({name!r}) hi", hi, self.num_envs)
        self._set(lambda p, a, b: p.stage_range(name, _rows(low, a, b), _rows(high, a, b)))

    def _set(self, stage) -> None:
        """``stage(params, a, b)`` of every shard, then their commits; a shard's refusal is raised
        with its env numbers counted in the whole (its env ``k`` is env ``a + k``)."""
        staged = []
        for params, (a, b) in zip(self._params, self._bounds):
            try:
                staged.append(stage(params, a, b))
            except (TypeError, ValueError) as exc:
                message = _ENV_NUMBER.sub(lambda m: f"env {int(m.group(1)) + a}", str(exc))
                raise type(exc)(message) from None
        seen: set[str] = set()  # a notice several shards return (a capacity's): once
        for params, one in zip(self._params, staged):
            params.commit(dataclasses.replace(one, notices=[n for n in one.notices if not (n in seen or seen.add(n))]))


def _same_setting(a, b) -> bool:
    """Whether two shards' values of an attribute are one setting: the same object, or equal plain
    values or frozen settings (a ``CarParams``); per-env objects (a course, arrays) are not."""
    if a is b:
        return True
    if callable(a) or isinstance(a, (np.ndarray, list, dict)) or type(a) is not type(b):
        return False
    try:
        return bool(a == b) is True and hash(a) == hash(b)
    except (TypeError, ValueError):  # unhashable, or an array inside
        return False


# an env's number in a refusal of Params: "(env 3)", "in env 3", "env 3 was given" (checks.first_bad, params)
_ENV_NUMBER = re.compile(r"\benv (\d+)\b")


def _read_only(values: np.ndarray) -> np.ndarray:
    values.flags.writeable = False
    return values


def _rows(given: np.ndarray, a: int, b: int) -> np.ndarray:
    """A number as it is; ``E`` numbers as the rows ``[a, b)``."""
    return given if given.ndim == 0 else given[a:b]


def _course_env_refusal(env_id, entry) -> TypeError:
    return TypeError(f"ShardedVectorEnv shards a trackgen course env (an id whose vector entry point is a "
                     f"CourseVectorEnv: 'TrackGen-Track-v0', 'TrackGen-Gates-v0'), got {env_id!r} (vector entry point "
                     f"{entry!r})")


def _check_course_env(env_id) -> None:
    """Refuse, before any shard is built, a registered id (or ``EnvSpec``) whose vector entry point is
    a class other than a :class:`CourseVectorEnv` (the shards' step, outputs and seeds are a course
    env's); gymnasium's error for an unregistered id. A ``"module:Id"`` or a factory entry point is
    checked on the first shard built (``__init__``)."""
    if isinstance(env_id, gymnasium.envs.registration.EnvSpec):
        spec = env_id
    elif isinstance(env_id, str) and ":" not in env_id:
        spec = gymnasium.spec(env_id)
    else:
        return
    entry = spec.vector_entry_point
    made = gymnasium.envs.registration.load_env_creator(entry) if isinstance(entry, str) else entry
    if made is None or (isinstance(made, type) and not issubclass(made, CourseVectorEnv)):
        raise _course_env_refusal(env_id, entry)


class ShardedVectorEnv(ReadOnlyAfterConstruction, SharedEnvCalls, gymnasium.vector.VectorEnv):
    """``num_envs`` envs of ``env_id`` as ``num_shards`` shard envs stepped in parallel threads.

    Args:
        env_id: a registered vector env id (``"TrackGen-Track-v0"``, ``"TrackGen-Gates-v0"``).
        num_envs: envs in all, an int >= 1.
        num_shards: shards (threads), an int in ``[1, num_envs]``; None: the CPU cores this
            process may use (``os.sched_getaffinity``), at most ``num_envs``. Shard ``k`` holds
            envs ``[k E / S, (k + 1) E / S)``.
        seed: an int, ``num_envs`` ints, or None (as the env's ``seed``).
        **kwargs: the env's other arguments (``device``, ``autoreset_mode``, ``car``, ...);
            ``output`` must be ``"numpy"`` (the shards write into shared host arrays).

    ``step`` runs the shards in parallel; ``reset`` runs them in turn (it may record a graph,
    and Warp's CPU capture state is one per process). ``reset(seed=, options=)`` and
    ``step(actions [E, A])`` return what one env of ``num_envs`` would, array for array and
    key for key: ``obs [E, D]`` float32, ``reward [E]`` float32, ``terminated [E]``, ``truncated
    [E]`` bool fresh NumPy arrays and the info dict (its arrays over all envs; under SAME_STEP
    ``final_obs`` / ``final_info`` when an env ended). ``options={"reset_mask": m}`` (``[E]``
    bool) resets the masked envs of the shards that hold one. ``params`` (a
    :class:`ShardedParams`) sets the live parameters of every shard at once, as one env's
    ``course.generator.params``; ``shards[k]`` is the env holding envs ``bounds[k]``. A setting
    that every shard holds alike reads as one env's (``env.car``, ``env.device``,
    ``env.max_episode_steps``); a shard's own objects (``course``, ``state``) through ``shards[k]``.
    ``render()`` and ``render_frames(num)`` draw each shard's envs, as one env's; ``render_mode``
    and ``render_size`` set every shard's. ``call``, ``get_attr`` and ``set_attr`` answer per env as
    one env's (:class:`~trackgen_env.envs.base.SharedEnvCalls`). A step interrupted while the shards ran (Ctrl-C)
    leaves the env unusable: its later steps and resets raise RuntimeError. It cannot be
    copied or pickled (TypeError), as one env.

    Raises:
        TypeError / ValueError: bad ``num_envs`` / ``num_shards`` / ``seed``, ``output`` other
            than ``"numpy"``, an ``env_id`` that is not a course env (gymnasium's error for an
            unregistered one); in ``step`` actions one env would refuse (another shape, not real
            floats, NaN) and in ``reset`` options one env would refuse, both before any shard
            changes. RuntimeError: a step before ``reset()`` or after ``close()``. The shard
            env's own errors as it raises them.
    """

    def __init__(self, env_id: str, num_envs: int, num_shards: int | None = None, *, seed=None, **kwargs):
        self.num_envs = check_int("num_envs", num_envs, lo=1)
        if num_shards is None:
            num_shards = min(len(os.sched_getaffinity(0)), self.num_envs)
        self.num_shards = check_int("num_shards", num_shards, lo=1, hi=self.num_envs)
        if kwargs.get("output", "numpy") != "numpy":
            raise ValueError(f"ShardedVectorEnv writes NumPy outputs: output must be 'numpy', got {kwargs['output']!r}")
        _check_no_window(kwargs.get("render_mode"))
        _check_course_env(env_id)
        E, S = self.num_envs, self.num_shards
        self.bounds = [(k * E // S, (k + 1) * E // S) for k in range(S)]
        self._rows = [slice(a, b) for a, b in self.bounds]
        seeds = _shard_seeds(seed, E, self.bounds)
        with warnings.catch_warnings(record=True) as caught:  # each shard's few-valid warning: once, below
            warnings.simplefilter("always")
            self.shards = []
            for (a, b), s in zip(self.bounds, seeds):
                self.shards.append(gymnasium.make_vec(env_id, num_envs=b - a, seed=s, **kwargs))
                if not isinstance(self.shards[0].unwrapped, CourseVectorEnv):  # a factory's, or "module:Id"'s
                    self.shards[0].close()
                    raise _course_env_refusal(env_id, type(self.shards[0].unwrapped).__name__)
                if self.shards[0].num_envs != self.bounds[0][1]:  # a batch of several bodies per env
                    self.shards[0].close()
                    raise TypeError(f"ShardedVectorEnv splits envs of one body each; {env_id}'s batch holds "
                                    f"{self.shards[0].num_envs} rows for {self.bounds[0][1]} envs (several cars "
                                    "per course): step it as one env")
        seen = set()
        for w in caught:  # the others as the shards raised them, each once
            key = (str(w.message), w.category, w.filename, w.lineno)
            if not issubclass(w.category, FewValidCoursesWarning) and key not in seen:
                seen.add(key)
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        for shard in self.shards:
            shard._warn_on_reset = False  # reset() warns once for all envs
        # where a shard warned, the whole may not: once, over every env (no shard warned where it does not)
        self._warn_if_few_valid("the first generation")
        first = self.shards[0]
        self.metadata = EnvMetadata({**first.metadata,
                                     "render_modes": [m for m in first.metadata["render_modes"] if m != "human"]})
        self.single_observation_space = first.single_observation_space
        self.single_action_space = first.single_action_space
        self.observation_space = batch_space(self.single_observation_space, E)
        self.action_space = batch_space(self.single_action_space, E)
        self.params = ShardedParams(self.shards, self.bounds)
        self._workers = _Workers(S)
        weakref.finalize(self, self._workers.close)
        self._freeze(())  # from here on, the names the shards hold (_is_read_only)

    def __getattr__(self, name: str):
        """A setting every shard holds alike (``car``, ``device``, ``max_episode_steps``, ...): the
        shards' value, as one env's. An attribute that differs between shards (``course``, the
        state) raises AttributeError pointing at ``shards[k]``."""
        shards = self.__dict__.get("shards")
        if shards is None or name.startswith("_") or not hasattr(shards[0], name):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        values = [getattr(shard, name) for shard in shards]
        # a shard's own size inside (a config or layout of num_envs / S envs) is not the whole's setting
        whole = getattr(values[0], "num_envs", self.num_envs) == self.num_envs
        if whole and all(_same_setting(values[0], v) for v in values[1:]):
            return values[0]
        raise AttributeError(f"{type(self).__name__}.{name}: each shard has its own (envs bounds[k]): read "
                             f"env.shards[k].{name}")

    def _is_read_only(self, name: str) -> bool:
        """After construction, a setting the shards hold (setting it would shadow theirs, which their
        graphs read); the env's own attributes are set as usual."""
        return ("_frozen" in self.__dict__ and name not in self.__dict__ and not hasattr(type(self), name)
                and hasattr(self.shards[0], name))

    def _read_only_message(self, name: str) -> str:
        return (f"{type(self).__name__}.{name} is the shards' setting, fixed at their construction: build the "
                "ShardedVectorEnv with it")

    @property
    def render_mode(self) -> str | None:
        """None or ``"rgb_array"`` (no ``"human"``), every shard's; settable, as one env's (the next
        ``render()`` uses it)."""
        return self.shards[0].render_mode

    @render_mode.setter
    def render_mode(self, value) -> None:
        _check_no_window(value)
        for shard in self.shards:  # the first refuses a bad value before any shard changes
            shard.render_mode = value

    @property
    def render_size(self) -> int:
        """[pixels] the frames' side, every shard's; settable, as one env's."""
        return self.shards[0].render_size

    @render_size.setter
    def render_size(self, value) -> None:
        for shard in self.shards:
            shard.render_size = value

    def render(self):
        """One RGB frame ``[H, W, 3]`` uint8 per env, as one env's ``render()``: a tuple of ``num_envs``
        frames, or None without ``render_mode`` (a warning).

        Raises:
            RuntimeError: the env is closed.
        """
        self._check_open()
        if self.render_mode is None:
            gymnasium.logger.warn('render() needs render_mode="rgb_array"')
            return None
        return tuple(self.render_frames())

    def render_frames(self, num: int | None = None) -> np.ndarray:
        """The frames of the first ``num`` envs (all when None) as one ``[num, H, W, 3]`` uint8 host
        array, each shard drawing its own envs (as one env's ``render_frames``).

        Raises:
            ValueError: ``num`` outside ``1 .. num_envs``. RuntimeError: the env is closed.
        """
        self._check_open()
        num = self.num_envs if num is None else check_int("num", num, lo=1, hi=self.num_envs)
        return np.concatenate([shard.render_frames(min(b, num) - a)
                               for shard, (a, b) in zip(self.shards, self.bounds) if a < num])

    def __getstate__(self):
        """Refuse ``pickle`` and ``copy``: the shards hold device arrays, recorded graphs and threads.

        Raises:
            TypeError: always.
        """
        raise TypeError(f"a {type(self).__name__} cannot be pickled or copied (its shards hold Warp device arrays, "
                        "recorded graphs and worker threads): build another with the same arguments")

    def _check_open(self) -> None:
        for shard in self.shards:
            shard.check_open()  # RuntimeError after close(), as one env's

    def reset(self, *, seed=None, options=None):
        """Reset as one env would (see the class docstring); ``(obs [E, D], info)``."""
        self._check_open()
        self._workers.check_whole()  # a step interrupted while the shards ran: the env is broken
        first = self.shards[0]
        seeds = [None] * self.num_shards if seed is None else _shard_seeds(seed, self.num_envs, self.bounds)
        mask = self.check_reset_options(options, seed)
        out = first.new_outputs(self.num_envs, final=False)
        # the first plain reset keeps the construction's courses (checked then) unless a live
        # parameter was set since, as one env's does
        fresh = seed is None and mask is None and all(shard._keeps_construction_courses for shard in self.shards)
        # in turn, not in the threads: a reset may record a graph, and Warp's CPU capture state is
        # one per process (a capture in one thread would take in another thread's launches)
        for k, shard in enumerate(self.shards):
            rows = self._rows[k]
            if mask is None:
                shard.reset(seed=seeds[k])
            elif mask[rows].any():  # a shard whose envs are all left alone keeps its outputs
                shard.reset(options={"reset_mask": mask[rows]})
            shard.copy_outputs(out, rows)
        if not fresh:  # as one env's reset: few valid courses among those it drew, once
            self._warn_if_few_valid("this reset", mask, min_invalid=RESET_MIN_INVALID)
        return out.reset_tuple(mask)

    def _warn_if_few_valid(self, after: str, mask: np.ndarray | None = None, *, min_invalid: int = 1) -> None:
        """``Program.warn_if_few_valid`` over every shard's envs, once (a generator of the package's;
        a producer of your own need not have it)."""
        check = getattr(self.shards[0].course.generator, "warn_if_few_valid", None)
        if check is not None:
            valid = np.concatenate([shard.course.generator.result.valid.numpy() for shard in self.shards])
            check(after, mask, valid=valid, min_invalid=min_invalid)

    def check_reset_options(self, options, seed=None):
        """Check ``reset(seed=, options=)``'s options as one env of ``num_envs`` would; returns the
        ``[E]`` bool reset mask, or None (the SB3 adapter's ``set_options`` checks through it)."""
        return self.shards[0].check_reset_options(options, seed, num_envs=self.num_envs)

    def step(self, actions):
        """Step every shard in its thread; ``(obs, reward, terminated, truncated, info)`` over all envs."""
        for shard in self.shards:
            shard.check_steppable()
        self._workers.check_whole()
        first = self.shards[0]
        actions = check_actions(actions, self.num_envs, self.single_action_space.shape[0], first.action_labels)
        out = first.new_outputs(self.num_envs)
        shards, rows = self.shards, self._rows
        self._workers.run(lambda k: shards[k].step_into(actions, out, rows[k]))
        return out.step_tuple()

    def close_extras(self, **kwargs):
        """Close every shard and stop the worker threads."""
        self._workers.close()
        for shard in self.shards:
            shard.close()
