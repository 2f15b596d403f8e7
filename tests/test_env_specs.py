"""The envs take a PipelineSpec: ``track=`` / ``gates=`` with ``registry=`` for plugin stages (issue 10)."""

import gymnasium
import numpy as np
import pytest
import warp as wp

import trackgen_env  # noqa: F401  (registers the env ids)
from trackgen_env import pipeline
from trackgen_env.envs.gates import GatesVectorEnv
from trackgen_env.envs.track import TrackVectorEnv
from trackgen_env.generators import GateGenConfig, TrackGenConfig
from trackgen_env.pipeline import PipelineSpec, presets


@wp.kernel
def _lift(pending: wp.array(dtype=wp.int32), height: wp.array(dtype=float), centerline: wp.array2d(dtype=wp.vec3)):
    e, j = wp.tid()
    if pending[e] == 0:
        return
    p = centerline[e, j]
    centerline[e, j] = wp.vec3(p[0], p[1], p[2] + height[e])


class Lift(pipeline.Stage):
    name, family = "test_env.lift", "track"
    params = (pipeline.Param("height", 0.0, 0.0, 5.0, "[m]"),)
    reads = writes = ("centerline",)

    def enqueue(self, ctx, pending):
        c = ctx.fields["centerline"]
        wp.launch(_lift, c.shape, inputs=[pending, ctx.params["test_env.lift.height"]], outputs=[c], device=ctx.device)


REG = pipeline.Registry()
REG.register(Lift)


def _rollout(env, steps=6):
    obs, _ = env.reset(seed=3)
    out = [obs]
    action = np.tile(np.array([0.2, 0.5], np.float32), (env.num_envs, 1))
    for _ in range(steps):
        out.append(env.step(action)[0])
    return np.stack(out)


def test_a_track_spec_drives_the_same_courses_as_its_config_and_the_env_overrides_num_envs_and_device():
    config = TrackGenConfig(size=9.0, width=0.7)
    a = TrackVectorEnv(4, "cpu", seed=3, track=config)
    b = TrackVectorEnv(4, "cpu", seed=3, track=config.to_spec().with_params({}))
    assert isinstance(b.track_config, PipelineSpec) and b.track_config.num_envs == 4 and b.track_config.device == "cpu"
    np.testing.assert_array_equal(_rollout(a), _rollout(b))
    np.testing.assert_array_equal(a.course.result.centerline.numpy(), b.course.result.centerline.numpy())


def test_a_spec_with_a_plugin_stage_and_its_registry_changes_the_courses_and_randomizes_per_env():
    spec = (presets.track(num_envs=1).with_stage("test_env.lift", after="resample", registry=REG)
            .with_randomize({"test_env.lift.height": (0.5, 1.5)}))
    env = TrackVectorEnv(8, "cpu", seed=5, track=spec, registry=REG)
    plain = TrackVectorEnv(8, "cpu", seed=5)
    assert env.registry is REG and "test_env.lift" in env.course.generator.stages
    heights = env.course.generator.params["test_env.lift.height"].numpy()
    assert ((heights >= 0.5) & (heights < 1.5)).all() and np.unique(heights).size == 8
    z = env.course.result.centerline.numpy()[..., 2]
    np.testing.assert_allclose(z, np.broadcast_to(heights[:, None], z.shape), rtol=1e-6)
    np.testing.assert_array_equal(env.course.result.centerline.numpy()[..., :2],
                                  plain.course.result.centerline.numpy()[..., :2])
    _rollout(env, 3)  # steps through its graph


def test_make_vec_takes_a_spec_and_a_registry():
    spec = presets.track(num_envs=1).with_stage("test_env.lift", registry=REG, params={"height": 0.25})
    env = gymnasium.make_vec("TrackGen-Track-v0", num_envs=2, vectorization_mode="vector_entry_point", device="cpu",
                             seed=1, track=spec, registry=REG)
    np.testing.assert_allclose(env.unwrapped.course.result.centerline.numpy()[..., 2], 0.25)
    env.close()


def test_a_saved_spec_rebuilds_the_same_env_courses():
    spec = presets.track(num_envs=1).with_randomize({"band.width": (0.6, 1.0), "layout.num_turns": (6.0, 12.999)})
    again = PipelineSpec.from_dict(__import__("json").loads(__import__("json").dumps(spec.to_dict())))
    a, b = TrackVectorEnv(4, "cpu", seed=2, track=spec), TrackVectorEnv(4, "cpu", seed=2, track=again)
    np.testing.assert_array_equal(_rollout(a), _rollout(b))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"track": presets.gates(gate_width=0.6)}, TypeError, "track= takes a track PipelineSpec, got a gates one"),
    ({"track": TrackGenConfig(), "registry": REG}, TypeError, "registry= holds the plugin stages of a PipelineSpec"),
    ({"track": presets.track(), "registry": "acme"}, TypeError,
     "registry must be a pipeline.Registry or None, got str"),
    ({"track": {"family": "track"}}, TypeError,
     "track must be a TrackGenConfig, a track PipelineSpec or None, got dict"),
    ({"track": presets.track().with_stage("test_env.lift", registry=REG)}, KeyError, "unknown stage 'test_env.lift'"),
    ({"registry": REG, "centerline": np.zeros((8, 4))}, TypeError, "not both"),
])
def test_the_track_env_refuses_a_wrong_source_clearly(kwargs, error, match):
    with pytest.raises(error, match=match):
        TrackVectorEnv(2, "cpu", seed=0, **kwargs)


@pytest.mark.parametrize("gates", [GateGenConfig(gate_width=0.6, source="layout"),
                                   presets.gates(gate_width=0.6, source="layout")])
def test_the_gates_env_refuses_a_given_layout_source_without_its_layout(gates):
    with pytest.raises(ValueError, match='gates= must generate its courses: a source="layout" config or spec .* '
                                         'pass it as layout='):
        GatesVectorEnv(2, "cpu", seed=0, gates=gates)


def test_a_gates_spec_flies_the_same_courses_as_its_config_and_a_track_spec_is_refused():
    config = GateGenConfig(gate_width=0.7, size=9.0)
    a = GatesVectorEnv(4, "cpu", seed=3, gates=config)
    b = GatesVectorEnv(4, "cpu", seed=3, gates=config.to_spec())
    assert b.gates_config.num_envs == 4
    oa, _ = a.reset(seed=3)
    ob, _ = b.reset(seed=3)
    np.testing.assert_array_equal(oa, ob)
    with pytest.raises(TypeError, match="gates= takes a gates PipelineSpec, got a track one"):
        GatesVectorEnv(2, "cpu", seed=0, gates=presets.track())
    with pytest.raises(TypeError, match="registry= holds the plugin stages"):
        GatesVectorEnv(2, "cpu", seed=0, gates=config, registry=REG)


class HostWidth(pipeline.Stage):
    """A host stage (reads back, writes with NumPy): registered capturable=False."""

    name, family = "test_env.host_width", "track"
    reads = writes = ("ctrl_hw",)

    def enqueue(self, ctx, pending):
        hw = ctx.fields["ctrl_hw"]
        rows = ctx.pending.numpy() != 0
        values = hw.numpy()
        values[rows] = 0.3
        hw.assign(values)


HOST = pipeline.Registry()
HOST.register(HostWidth, capturable=False)


def test_a_spec_with_a_host_stage_steps_eagerly_with_one_warning():
    spec = presets.track().with_stage("test_env.host_width", after="band", registry=HOST)
    with pytest.warns(RuntimeWarning) as record:
        env = TrackVectorEnv(2, "cpu", seed=0, track=spec, registry=HOST, max_episode_steps=2)
    assert len([w for w in record if issubclass(w.category, RuntimeWarning)]) == 1
    assert env.graph is None
    _rollout(env, 4)  # through an auto-reset: the host stage regenerates eagerly
    np.testing.assert_allclose(env.course.result.half_width.numpy(), 0.3)


@pytest.mark.parametrize("make, match", [
    (lambda: TrackVectorEnv(3, "cpu", track=presets.track().with_params({"band.width": 3.2}), seed=0),
     r"only 0 of 3 envs \(0.0%\) hold a valid track course"),
    (lambda: TrackVectorEnv(4, "cpu", track=presets.track().with_params({"band.width": 3.0}), seed=0),
     r"only 0 of 4 envs \(0.0%\) hold a valid track course"),
    # 7 gates in a 4 m disc: room for neighbours 1.7 m apart (a 3 m disc is refused), but no draw fits
    (lambda: GatesVectorEnv(3, "cpu", gates=presets.gates(gate_width=0.6, max_retries=2).with_params(
        {"layout.size": 4.0}), seed=0), r"only 0 of 3 envs \(0.0%\) hold a valid gates course"),
])
def test_a_spec_of_invalid_courses_warns_at_env_construction(make, match):
    # the env builds the spec's program without its first generation (the course runs it):
    # the program's low-valid warning must still be raised, once, at the user's line
    with pytest.warns(UserWarning, match=match) as caught:
        env = make()
    low = [w for w in caught if "hold a valid" in str(w.message)]
    assert len(low) == 1 and low[0].filename == __file__
    assert env.course.result.valid.numpy().sum() == 0
    env.close()


@pytest.mark.parametrize("gates, given", [(presets.gates(), "presets.gates"), (GateGenConfig(), "GateGenConfig"),
                                          (presets.gates().with_randomize({"gate_frames.gate_width": (0.0, 0.5)}),
                                           "presets.gates")])
def test_a_width_0_gates_source_is_refused_at_the_argument_check_saying_what_to_pass(gates, given, monkeypatch):
    from trackgen_env.course import memory

    def no_probe(*args, **kwargs):
        raise AssertionError("the memory estimate built probes before the width was checked")

    monkeypatch.setattr(memory, "probe", no_probe)  # 3 envs: the estimate would probe first
    with pytest.raises(ValueError, match=rf"gate_frames.gate_width is 0.0: a gate of width <= 0 can never be passed; "
                                         rf"pass gates={given}\(gate_width=0.6, ...\) \(the env's default opening"):
        GatesVectorEnv(3, "cpu", gates=gates)


def test_a_reset_that_leaves_most_envs_without_a_course_warns_at_the_callers_line():
    """A live value the layout cannot draw (a band a third of the square wide) is accepted, and the
    next reset says that the envs hold no course, rather than leaving envs that end every step."""
    import warnings

    env = TrackVectorEnv(num_envs=8, device="cpu", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset()  # the construction's courses: no warning
        env.reset(seed=1)
    env.course.generator.params["band.width"] = 3.2  # room for a loop (3.4 m would be refused), none passes
    with pytest.warns(UserWarning,
                      match=r"only 0 of 8 envs \(0.0%\) hold a valid track course after this reset") as rec:
        env.reset()
    assert rec[0].filename == __file__
    env.course.generator.params["band.width"] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset(seed=2)
    masked = TrackVectorEnv(num_envs=8, device="cpu", seed=0, autoreset_mode=gymnasium.vector.AutoresetMode.DISABLED)
    masked.reset()
    masked.course.generator.params["band.width"] = 3.2
    with pytest.warns(UserWarning, match=r"only 0 of 4 envs"):  # of the envs the masked reset drew
        masked.reset(options={"reset_mask": np.arange(8) < 4})
    with warnings.catch_warnings():  # two envs without a course can be chance (RESET_MIN_INVALID)
        warnings.simplefilter("error")
        masked.reset(options={"reset_mask": np.arange(8) < 2})
    env.close()
    masked.close()
