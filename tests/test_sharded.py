"""ShardedVectorEnv: shards stepped in threads give exactly one env's outputs for the same seeds."""

import gc
import threading

import gymnasium
import numpy as np
import pytest

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env.envs.sharded import ShardedVectorEnv, _Workers
from trackgen_env.pipeline import presets


def _same(a, b):
    """Two step (or reset) tuples hold equal arrays of equal dtypes, key for key (nested info too)."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, dict):
            assert list(x) == list(y)
            _same(tuple(x.values()), tuple(y.values()))
        else:
            assert isinstance(y, np.ndarray) and x.dtype == y.dtype
            assert np.array_equal(x, y)


def _shard_threads():
    return [t for t in threading.enumerate() if t.name.startswith("trackgen-shard")]


@pytest.mark.parametrize("env_id, mode", [("TrackGen-Track-v0", "NextStep"), ("TrackGen-Gates-v0", "NextStep"),
                                          ("TrackGen-Track-v0", "SameStep")])
def test_shards_equal_one_env_of_the_same_seeds_step_for_step(env_id, mode):
    """obs, reward, terminated, truncated and info (SAME_STEP's final_obs / final_info, present only
    when an env of any shard ended) equal one env's over a rollout with auto-resets and a reseed."""
    E = 7
    one = gymnasium.make_vec(env_id, num_envs=E, seed=3, device="cpu", autoreset_mode=mode)
    sharded = ShardedVectorEnv(env_id, E, 3, seed=3, device="cpu", autoreset_mode=mode)
    assert [b - a for a, b in sharded.bounds] == [2, 2, 3]
    assert sharded.observation_space == one.observation_space and sharded.action_space == one.action_space
    assert sharded.metadata["autoreset_mode"] == one.metadata["autoreset_mode"]
    _same(one.reset(), sharded.reset())
    rng = np.random.default_rng(0)
    ended = with_final = 0
    for step in range(80):
        if step == 40:  # reseeding maps the seed over the shards as one env does
            _same(one.reset(seed=11), sharded.reset(seed=11))
        a = rng.uniform(-1.5, 1.5, one.action_space.shape)  # float64, some out of [-1, 1]: the clip
        r1 = one.step(a)
        _same(r1, sharded.step(a))
        ended += int((r1[2] | r1[3]).sum())
        with_final += "final_obs" in r1[4]
    assert ended > 0  # auto-resets happened inside the shards too
    assert (with_final > 0) == (mode == "SameStep")
    one.close()
    sharded.close()


def test_a_masked_reset_touching_one_shard_leaves_the_others_as_one_env_does():
    kw = dict(device="cpu", autoreset_mode="Disabled")
    one = gymnasium.make_vec("TrackGen-Track-v0", num_envs=6, seed=5, **kw)
    sharded = ShardedVectorEnv("TrackGen-Track-v0", 6, 2, seed=5, **kw)
    one.reset()
    sharded.reset()
    a = np.tile(np.float32([[0.3, 0.8]]), (6, 1))
    for _ in range(5):
        _same(one.step(a), sharded.step(a))
    mask = np.array([False, True, False, False, False, False])  # in shard 0 only
    _same(one.reset(options={"reset_mask": mask}), sharded.reset(options={"reset_mask": mask}))
    _same(one.step(a), sharded.step(a))


def test_outputs_are_fresh_arrays_that_a_later_step_leaves_alone():
    env = ShardedVectorEnv("TrackGen-Track-v0", 4, 2, seed=0, device="cpu")
    obs0, _ = env.reset()
    kept = obs0.copy()
    first = env.step(np.ones((4, 2), np.float32))
    copies = [x.copy() for x in first[:4]]
    second = env.step(np.ones((4, 2), np.float32))
    assert np.array_equal(obs0, kept)
    for x, y, z in zip(first[:4], copies, second[:4]):
        assert np.array_equal(x, y) and not np.shares_memory(x, z)
    assert not np.array_equal(first[0], second[0])  # the cars moved
    env.close()


def test_bad_arguments_are_refused_before_any_shard_steps():
    with pytest.raises(ValueError, match="num_shards"):
        ShardedVectorEnv("TrackGen-Track-v0", 2, 3, seed=0, device="cpu")
    with pytest.raises(ValueError, match="output must be 'numpy'"):
        ShardedVectorEnv("TrackGen-Track-v0", 2, 2, seed=0, device="cpu", output="torch")
    with pytest.raises(ValueError, match="3 ints"):
        ShardedVectorEnv("TrackGen-Track-v0", 3, 2, seed=[1, 2], device="cpu")
    with pytest.raises(ValueError, match=r"an int in \[0, 2\*\*64\)"):
        ShardedVectorEnv("TrackGen-Track-v0", 3, 2, seed=-1, device="cpu")
    with pytest.raises(TypeError, match=r"shards a trackgen course env .* got 'CartPole-v1' \(vector entry point"):
        ShardedVectorEnv("CartPole-v1", 4, 2)  # its vector env is not a course env (it takes no seed=)
    with pytest.raises(gymnasium.error.NameNotFound):
        ShardedVectorEnv("NoSuchEnv-v0", 4, 2)
    with pytest.raises(TypeError, match="shards a trackgen course env"):
        ShardedVectorEnv(gymnasium.spec("CartPole-v1"), 4, 2)
    for env_id in (gymnasium.spec("TrackGen-Track-v0"), "trackgen_env:TrackGen-Track-v0"):  # as make_vec takes them
        ShardedVectorEnv(env_id, 2, 2, seed=0, device="cpu").close()


def test_bad_actions_raise_one_envs_error_and_leave_every_shard_unchanged():
    """The actions are checked once over all envs: the message names the env as one env's does
    (not its row in a shard), and no shard steps, not even those before the bad rows."""
    one = gymnasium.make_vec("TrackGen-Track-v0", num_envs=6, seed=2, device="cpu")
    env = ShardedVectorEnv("TrackGen-Track-v0", 6, 3, seed=2, device="cpu")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros((6, 2), np.float32))
    _same(one.reset(), env.reset())
    nan = np.zeros((6, 2), np.float32)
    nan[5, 1] = np.nan  # in the last shard
    bad = [nan, np.zeros((5, 2), np.float32), np.zeros((6, 3), np.float32), np.zeros((6, 2), np.int32)]
    for actions in bad:
        with pytest.raises((TypeError, ValueError)) as expected:
            one.step(actions)
        with pytest.raises(expected.type) as got:
            env.step(actions)
        assert str(got.value) == str(expected.value)
    assert "env(s) [5]" in str(pytest.raises(ValueError, env.step, nan).value)
    inf = np.zeros((6, 2), np.float32)
    inf[0] = [np.inf, -np.inf]  # not NaN (their sum is): accepted, clipped
    _same(one.step(inf), env.step(inf))
    _same(one.step(np.ones((6, 2))), env.step(np.ones((6, 2))))  # nothing moved before
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(np.zeros((6, 2), np.float32))
    one.close()


def test_bad_reset_options_raise_one_envs_error_before_any_shard_resets():
    kw = dict(device="cpu", autoreset_mode="Disabled")
    one = gymnasium.make_vec("TrackGen-Track-v0", num_envs=4, seed=1, **kw)
    env = ShardedVectorEnv("TrackGen-Track-v0", 4, 2, seed=1, **kw)
    no = np.zeros(4, bool)
    yes = np.array([True, False, False, False])
    bad = [dict(options={"reset_mask": yes}),  # before the first full reset
           dict(options={"reset_mask": no}), dict(options={"reset_mask": np.ones(3, bool)}),
           dict(options={"reset_mask": yes.astype(int)}), dict(options={"reset_mask": yes}, seed=1),
           dict(options={"other": 1}), dict(seed=-2)]
    for i, kwargs in enumerate(bad):
        if i == 1:
            _same(one.reset(), env.reset())
        with pytest.raises((TypeError, ValueError, RuntimeError)) as expected:
            one.reset(**kwargs)
        with pytest.raises(expected.type) as got:
            env.reset(**kwargs)
        assert str(got.value) == str(expected.value), kwargs
    a = np.full((4, 2), 0.5, np.float32)
    _same(one.step(a), env.step(a))  # every shard as before
    one.close()
    env.close()


def test_the_worker_threads_persist_and_stop_with_close_or_collection():
    before = len(_shard_threads())
    env = ShardedVectorEnv("TrackGen-Track-v0", 6, 3, seed=0, device="cpu")
    threads = _shard_threads()
    assert len(threads) == before + 2  # shard 0 steps in the caller's thread
    obs, _ = env.reset()
    for _ in range(3):
        env.step(np.zeros((6, 2), np.float32))
    assert _shard_threads() == threads  # the same threads, none started per step
    env.close()
    assert len(_shard_threads()) == before
    for call in (lambda: env.reset(seed=0), lambda: env.step(np.zeros((6, 2), np.float32))):
        with pytest.raises(RuntimeError, match="the env is closed"):  # as one env's, after close()
            call()
    dropped = ShardedVectorEnv("TrackGen-Track-v0", 2, 2, seed=0, device="cpu")
    assert len(_shard_threads()) == before + 1
    del dropped  # never closed: the threads hold no reference to it, its finalizer stops them
    gc.collect()
    assert len(_shard_threads()) == before


def test_a_workers_exception_reaches_the_caller_and_the_next_run_works():
    workers = _Workers(3)
    seen = []

    def job(k):
        if k == 2:
            raise KeyError("shard 2")
        seen.append(k)

    with pytest.raises(KeyError, match="shard 2"):
        workers.run(job)
    assert sorted(seen) == [0, 1]  # the others ran to the end before the caller saw it
    workers.run(seen.append)
    assert sorted(seen) == [0, 0, 1, 1, 2]
    workers.close()


def test_torch_and_float64_actions_step_as_in_one_env():
    """Actions of any real float kind one env takes (a CPU torch tensor, float64 beyond [-1, 1]) give its outputs."""
    torch = pytest.importorskip("torch")
    one = gymnasium.make_vec("TrackGen-Gates-v0", num_envs=5, seed=4, device="cpu")
    env = ShardedVectorEnv("TrackGen-Gates-v0", 5, 2, seed=4, device="cpu")
    _same(one.reset(), env.reset())
    rng = np.random.default_rng(1)
    for _ in range(3):
        a = rng.uniform(-2, 2, one.action_space.shape)
        _same(one.step(torch.from_numpy(a.astype(np.float32))), env.step(torch.from_numpy(a.astype(np.float32))))
        _same(one.step(a), env.step(a))
    one.close()
    env.close()


def test_a_thread_that_has_not_started_leaves_its_shard_to_the_caller():
    """On a loaded machine a worker thread may get no core for a while: the caller then steps
    that shard itself instead of waiting for the thread to start."""
    workers = _Workers(2)
    gate, held = threading.Event(), threading.Lock()
    held.acquire()
    workers._tasks.put((iter([0]), lambda k: gate.wait(), [None], [held]))  # the one thread is busy elsewhere
    ran = []
    caller = threading.Thread(target=workers.run, args=(lambda k: ran.append((k, threading.current_thread().name)),),
                              name="caller")
    try:
        caller.start()
        caller.join(timeout=30)
        assert not caller.is_alive(), "run() waited for a thread that had not started"
        assert sorted(ran) == [(0, "caller"), (1, "caller")]
    finally:
        gate.set()
        caller.join()
        workers.close()


def _live(env, name):
    return np.concatenate([s.course.generator.params[name].numpy() for s in env.shards])


def test_params_set_every_shard_as_one_envs_params_would():
    """A number or E values reach each shard's rows; the next courses read them as one env's do."""
    env = ShardedVectorEnv("TrackGen-Track-v0", 7, 3, seed=2, device="cpu")
    one = gymnasium.make_vec("TrackGen-Track-v0", num_envs=7, seed=2, device="cpu")
    width = np.linspace(1.0, 1.6, 7)
    env.params["band.width"] = width
    one.unwrapped.course.generator.params["band.width"] = width
    assert np.array_equal(env.params["band.width"], width.astype(np.float32))
    assert np.array_equal(_live(env, "band.width"), width.astype(np.float32))
    _same(one.reset(seed=4), env.reset(seed=4))
    env.params["band.width"] = 1.25  # a number: every env of every shard
    assert np.all(_live(env, "band.width") == np.float32(1.25))
    assert sorted(env.params) == sorted(one.unwrapped.course.generator.params) and len(env.params) > 0
    env.close()
    one.close()


def test_params_copies_are_read_only_as_one_envs_views():
    """An item written into params[name] (a copy over every shard) changed nothing, silently."""
    env = ShardedVectorEnv("TrackGen-Track-v0", 4, 2, seed=2, device="cpu",
                           track=presets.track(num_envs=4, device="cpu").with_randomize({"band.width": (1.0, 1.4)}))
    with pytest.raises(ValueError, match="read-only"):
        env.params["layout.size"][0] = 3.0
    lo, hi = env.params.randomize["band.width"]
    with pytest.raises(ValueError, match="read-only"):
        lo[0] = 0.5
    with pytest.raises(TypeError):
        env.params.randomize["band.width"] = (lo, hi)
    assert np.all(_live(env, "layout.size") == env.params["layout.size"])
    env.close()


def test_a_live_set_before_the_first_reset_draws_new_courses_in_every_shard_as_in_one_env():
    env = ShardedVectorEnv("TrackGen-Track-v0", 6, 2, seed=3, device="cpu")
    one = gymnasium.make_vec("TrackGen-Track-v0", num_envs=6, seed=3, device="cpu")
    env.params["band.width"] = 1.5
    one.unwrapped.course.generator.params["band.width"] = 1.5
    obs, _ = env.reset()
    _same(one.reset(), (obs, _))
    untouched = gymnasium.make_vec("TrackGen-Track-v0", num_envs=6, seed=3, device="cpu")
    assert not np.array_equal(untouched.reset()[0], obs)  # the construction's courses were not kept
    env.close()
    one.close()
    untouched.close()


_BAD_SETS = [  # (name, value): one env refuses each; so does a sharded env, with the same error
    ("band.width", "np.where(np.arange(7) == 5, 0.0, 1.2)"), ("band.width", "np.where(np.arange(7) == 5, 1e-50, 1.2)"),
    ("band.width", "np.where(np.arange(7) == 0, np.nan, 1.2)"), ("band.width", "np.ones(6)"),
    ("band.width", "np.ones((7, 1))"), ("band.width", "'wide'"), ("band.width", "np.array(['a'] * 3)"),
    ("band.width", "[1.0] * 6 + ['x']"), ("band.width", "[[1.0], [1.0, 2.0]]"), ("band.width", "True"),
    ("band.width", "None"), ("band.width", "1e39"), ("band.nope", "np.ones(3)"), ("band.nope", "1.0"),
]


def _refusal(params, name, value):
    with pytest.raises((KeyError, TypeError, ValueError)) as info:
        params[name] = eval(value)
    return info.type, str(info.value)


@pytest.mark.parametrize("name, bad", _BAD_SETS)
def test_a_value_one_env_refuses_is_refused_alike_and_leaves_every_shard_as_it_was(name, bad):
    """The same error type and message as one env of the same envs (its env numbers counted in the
    whole, not in the shard), and nothing written in any shard."""
    env = ShardedVectorEnv("TrackGen-Track-v0", 7, 3, seed=2, device="cpu")
    one = gymnasium.make_vec("TrackGen-Track-v0", num_envs=7, seed=2, device="cpu")
    env.params["band.width"] = np.full(7, 1.1)
    one.unwrapped.course.generator.params["band.width"] = np.full(7, 1.1)
    assert _refusal(env.params, name, bad) == _refusal(one.unwrapped.course.generator.params, name, bad)
    assert np.all(_live(env, "band.width") == np.float32(1.1))
    env.close()
    one.close()


def test_a_refusal_names_the_env_in_the_whole():
    env = ShardedVectorEnv("TrackGen-Track-v0", 7, 3, seed=2, device="cpu")  # shards [0, 2), [2, 4), [4, 7)
    with pytest.raises(ValueError, match=r"\(env 5\)$"):
        env.params["band.width"] = np.where(np.arange(7) == 5, 0.0, 1.2)
    with pytest.raises(ValueError, match=r"env 6 was given 1e-50"):
        env.params["band.width"] = np.where(np.arange(7) == 6, 1e-50, 1.2)
    env.close()


def _randomized(env_cls, n, shards=None):
    from trackgen_env.pipeline import presets

    spec = presets.track(num_envs=1, device="cpu").with_randomize({"band.width": (1.0, 1.2)})
    if shards is None:
        return gymnasium.make_vec("TrackGen-Track-v0", num_envs=n, seed=1, device="cpu", track=spec)
    return ShardedVectorEnv("TrackGen-Track-v0", n, shards, seed=1, device="cpu", track=spec)


def test_set_range_moves_every_shards_range_or_none():
    env = _randomized(ShardedVectorEnv, 6, 2)
    env.params.set_range("band.width", 1.3, np.linspace(1.4, 1.9, 6))
    lo, hi = env.params.randomize["band.width"]
    assert np.all(lo == np.float32(1.3)) and np.array_equal(hi, np.linspace(1.4, 1.9, 6).astype(np.float32))
    env.reset(seed=0)
    half = np.concatenate([s.course.result.half_width.numpy()[:, 0] for s in env.shards]) * 2
    assert np.all((half >= 1.3 - 1e-6) & (half <= hi + 1e-6))
    with pytest.raises(ValueError, match=r"lo <= hi, got \(1.3, 1\) in env 4"):  # shard 1's env 1
        env.params.set_range("band.width", 1.3, np.where(np.arange(6) == 4, 1.0, 2.0))
    assert np.array_equal(env.params.randomize["band.width"][1], hi)  # shard 0 kept its range too
    env.close()


@pytest.mark.parametrize("call", [
    "p.set_range('band.width', 1.3, np.where(np.arange(6) == 4, 1.0, 2.0))", "p.set_range('band.width', 0.0, 1.0)",
    "p.set_range('band.width', np.ones(5), 2.0)", "p.set_range('band.nope', np.ones(5), 2.0)",
    "p.set_range('layout.size', np.ones(5), 2.0)", "p.set_range('band.width', 'a', 2.0)",
    "p.__setitem__('band.width', 1.0)",
])
def test_a_range_one_env_refuses_is_refused_alike(call):
    env, one = _randomized(ShardedVectorEnv, 6, 2), _randomized(None, 6)
    errors = []
    for p in (env.params, one.unwrapped.course.generator.params):
        with pytest.raises((KeyError, TypeError, ValueError)) as info:
            eval(call)
        errors.append((info.type, str(info.value)))
    assert errors[0] == errors[1]
    assert np.all(env.params.randomize["band.width"][1] == np.float32(1.2))
    env.close()
    one.close()


def test_a_notice_every_shard_returns_warns_once_at_the_callers_line():
    env = ShardedVectorEnv("TrackGen-Track-v0", 4, 2, seed=0, device="cpu")
    with pytest.warns(UserWarning, match="capacity") as record:
        env.params["layout.size"] = 40.0  # loops longer than max_points holds: each shard's notice
    notices = [w for w in record if "capacity" in str(w.message)]
    assert len(notices) == 1 and notices[0].filename == __file__
    assert np.all(_live(env, "layout.size") == 40.0)  # a notice, not a refusal: written
    env.close()


def test_a_setting_every_shard_holds_alike_reads_as_one_envs():
    """``car``, ``device``, ``max_episode_steps`` ... read as one env's (PurePursuit(env.car) drives a
    sharded env; the SB3 adapter's get_attr finds them); a shard's own (its course, its state, a config
    of its num_envs) raises AttributeError naming ``shards[k]``."""
    from trackgen_env.envs.controllers import PurePursuit

    env = ShardedVectorEnv("TrackGen-Track-v0", 7, 3, seed=0, device="cpu", max_episode_steps=50)
    one = gymnasium.make_vec("TrackGen-Track-v0", num_envs=7, seed=0, device="cpu", max_episode_steps=50).unwrapped
    for name in ("car", "car_model", "device", "max_episode_steps", "laps", "output", "num_lookahead",
                 "autoreset_mode"):
        assert getattr(env, name) == getattr(one, name), name
    obs, _ = env.reset(seed=0)
    assert np.array_equal(PurePursuit(env.car)(obs), PurePursuit(one.car)(one.reset(seed=0)[0]))
    for name in ("course", "state", "graph", "track_config"):
        with pytest.raises(AttributeError, match=rf"env.shards\[k\].{name}"):
            getattr(env, name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        env.nope
    env.close()
    one.close()


def test_a_reset_that_leaves_most_envs_without_a_course_warns_once_for_all_shards():
    import warnings

    env = ShardedVectorEnv("TrackGen-Track-v0", 8, 2, seed=0, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset()
        env.reset(seed=1)
    env.params["band.width"] = 3.2  # room for a loop, but none draws
    with pytest.warns(UserWarning) as record:
        env.reset()
    few = [w for w in record if "hold a valid track course" in str(w.message)]
    assert len(few) == 1 and "only 0 of 8 envs" in str(few[0].message) and few[0].filename == __file__
    env.close()


def test_a_shards_setting_is_read_only_and_few_valid_courses_warn_once_at_construction():
    env = ShardedVectorEnv("TrackGen-Track-v0", 4, 2, seed=0, device="cpu")
    with pytest.raises(AttributeError, match="ShardedVectorEnv.max_episode_steps is the shards' setting"):
        env.max_episode_steps = 5
    assert all(s.max_episode_steps == env.max_episode_steps != 5 for s in env.shards)
    with pytest.raises(AttributeError, match="'ShardedVectorEnv' object has no attribute 'nope'"):
        env.nope
    env.note = "mine"  # an attribute of its own: set as usual
    env.close()
    from trackgen_env.pipeline import presets

    spec = presets.track(num_envs=1, device="cpu").with_params({"band.width": 3.2})  # too wide for the layout
    with pytest.warns(UserWarning) as record:  # every course rejected: one warning for the 8 envs, not one per shard
        bad = ShardedVectorEnv("TrackGen-Track-v0", 8, 4, seed=0, device="cpu", track=spec)
    few = [w for w in record if "hold a valid" in str(w.message)]
    assert len(few) == 1 and "only 0 of 8 envs" in str(few[0].message)
    bad.close()


def test_render_draws_every_shards_envs_as_one_envs_render():
    one = gymnasium.make_vec("TrackGen-Track-v0", num_envs=5, seed=3, device="cpu", render_mode="rgb_array",
                             render_size=32)
    env = ShardedVectorEnv("TrackGen-Track-v0", 5, 2, seed=3, device="cpu", render_mode="rgb_array", render_size=32)
    for e in (one, env):
        e.reset(seed=3)
        for _ in range(3):
            e.step(np.full((5, 2), 0.5, np.float32))
    np.testing.assert_array_equal(np.stack(env.render()), np.stack(one.render()))
    for num in (1, 2, 3, 5):  # within the first shard, at its end, across both
        np.testing.assert_array_equal(env.render_frames(num), one.render_frames(num))
    with pytest.raises(ValueError, match="num"):
        env.render_frames(6)
    env.render_size = 48  # live, as one env's: every shard
    assert env.render_size == 48 and all(s.render_size == 48 for s in env.shards)
    assert env.render_frames(3).shape == (3, 48, 48, 3)
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        env.render_mode = "bogus"
    assert env.render_mode == "rgb_array" and all(s.render_mode == "rgb_array" for s in env.shards)
    env.render_mode = None
    with pytest.warns(UserWarning, match='render\\(\\) needs render_mode="rgb_array"'):
        assert env.render() is None
    assert all(s.render_mode is None for s in env.shards)
    env.close()
    with pytest.raises(RuntimeError, match="the env is closed"):
        env.render_frames(1)
    one.close()


def test_an_interrupted_step_leaves_steps_and_resets_refused():
    env = ShardedVectorEnv("TrackGen-Track-v0", 4, 2, seed=0, device="cpu")
    env.reset(seed=0)
    env._workers._broken = True  # what a KeyboardInterrupt in the caller's wait leaves (_Workers.run)
    for call in (lambda: env.step(np.zeros((4, 2), np.float32)), lambda: env.reset(seed=0)):
        with pytest.raises(RuntimeError, match="an earlier step was interrupted .*build a new env"):
            call()
    env.close()


def test_a_sharded_env_is_not_copied_or_pickled_and_its_params_close_with_it():
    import copy
    import pickle

    env = ShardedVectorEnv("TrackGen-Track-v0", 4, 2, seed=0, device="cpu")
    for call in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="a ShardedVectorEnv cannot be pickled or copied"):
            call(env)
    params = env.params
    env.close()
    for call in (lambda: params["band.width"], lambda: params.__setitem__("band.width", 1.0),
                 lambda: env.params["band.width"], lambda: params.randomize):
        with pytest.raises(RuntimeError, match="the env is closed"):
            call()
