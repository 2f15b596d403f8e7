"""``tools.check_component`` and the CaptureError that names a component at a masked regeneration."""

from __future__ import annotations

import pytest
import warp as wp
from course_fakes import Counter, FakeGenerator, Log, _copy_first, vec3s

from trackgen_env import (
    GateGenConfig,
    GateGenerator,
    TrackGenConfig,
    TrackGenerator,
    tools,
)
from trackgen_env.core import exec as exec_modes
from trackgen_env.core.capture import CaptureError, is_capturing
from trackgen_env.course import Course

E = 4


@pytest.fixture(scope="module")
def track():
    return TrackGenerator(TrackGenConfig(num_envs=E, device="cpu"), seeds=1)


@pytest.mark.parametrize("make, needs", [
    (lambda: tools.Checkpoints(0.6), ()),
    (lambda: tools.Progress(), ("checkpoints",)),
    (lambda: tools.BandCollision("segments"), ()),
    (lambda: tools.BandCollision("sdf"), ()),
    (lambda: tools.Localizer(), ()),
])
def test_check_component_passes_the_built_in_track_components(track, make, needs):
    sources = [tools.Checkpoints(0.6)] if needs else []
    tools.check_component(make(), track, inputs={"position": vec3s(E)}, sources=sources)


def test_check_component_passes_the_built_in_gate_components():
    gen = GateGenerator(GateGenConfig(num_envs=E, device="cpu", gate_width=0.1))
    tools.check_component(tools.GateCheckpoints(), gen)
    tools.check_component(tools.DiscCollision(0.02), gen, inputs={"position": vec3s(E)})
    line = tools.CenterlineFromGates(8)
    tools.check_component(tools.Localizer(source="centerline"), gen, inputs={"position": vec3s(E)}, sources=[line])


def test_check_component_passes_an_object_of_your_own():
    tools.check_component(Counter("acme.count"), FakeGenerator(E), inputs={"position": vec3s(E)})


class _IgnoresMask(Log):
    def on_generate(self, ctx, mask):
        wp.launch(_copy_first, ctx.num_envs, inputs=[ctx.all_envs, ctx.result.value], outputs=[self.first],
                  device=ctx.device)


def test_check_component_finds_an_on_generate_that_ignores_the_mask():
    with pytest.raises(ValueError, match="all-zero mask"):
        tools.check_component(_IgnoresMask("acme.greedy"), FakeGenerator(E))


class _ReadsInput(Counter):
    def on_generate(self, ctx, mask):
        super().on_generate(ctx, mask)
        if "position" in self.bound:
            wp.copy(self.res.last_x, wp.array(self.bound["position"].numpy()[:, 0], dtype=float, device=ctx.device))


def test_check_component_finds_an_on_generate_that_reads_a_bound_input():
    with pytest.raises(ValueError, match="bound input"):
        tools.check_component(_ReadsInput("acme.reader"), FakeGenerator(E), inputs={"position": vec3s(E)})


class _HostReset(Log):
    """Stands for an operation a conditional body cannot hold (a pageable host copy on CUDA): Warp
    refuses a capture begun inside a capture."""

    def reset(self, ctx, mask):
        super().reset(ctx, mask)
        if is_capturing(ctx.device):
            with wp.ScopedCapture(device=ctx.device, force_module_load=False):
                pass


def test_check_component_names_the_method_a_conditional_body_cannot_hold():
    with pytest.raises(CaptureError, match=r"'acme.host': reset .*test_course_check_component.py:\d+ in reset"):
        tools.check_component(_HostReset("acme.host"), FakeGenerator(E))


def test_masked_regeneration_capture_error_names_the_component():
    course = Course(FakeGenerator(E), [Log("a"), _HostReset("acme.host")])
    mask = wp.zeros(E, dtype=wp.int32, device="cpu")
    with pytest.raises(CaptureError, match=r"acme\.host\.reset.*unconditional"), wp.ScopedCapture(device="cpu"):
        course.regenerate(mask=mask, advance=True)


def test_masked_regeneration_error_outside_a_conditional_body_propagates_as_is():
    course = Course(FakeGenerator(E), [_HostReset("acme.host")])
    with exec_modes.unconditional(), pytest.raises(RuntimeError, match="capture already in progress") as info, \
            wp.ScopedCapture(device="cpu"):
        course.regenerate(mask=wp.zeros(E, dtype=wp.int32, device="cpu"))
    assert not isinstance(info.value, CaptureError)


class _ResetIgnoresMask(Counter):
    def reset(self, ctx, mask):
        self.log.append((self.name, "reset"))
        self.res.count.zero_()  # every env's state, whatever the mask


def test_check_component_finds_a_reset_that_ignores_the_mask_once_a_step_made_state():
    with pytest.raises(ValueError, match="all-zero mask after a step changed .*count"):
        tools.check_component(_ResetIgnoresMask("acme.forgetful"), FakeGenerator(E), inputs={"position": vec3s(E)})


class _ResetReadsInput(Counter):
    def reset(self, ctx, mask):
        super().reset(ctx, mask)
        self.bound["position"]


def test_check_component_names_a_reset_that_reads_a_bound_input_and_refuses_unknown_inputs():
    with pytest.raises(ValueError, match="'acme.rb': reset reads a bound input .*only step may read"):
        tools.check_component(_ResetReadsInput("acme.rb"), FakeGenerator(E), inputs={"position": vec3s(E)})
    with pytest.raises(TypeError,
                       match=r"inputs \['foo'\] are not inputs of 'acme.count', which declares \['position'\]"):
        tools.check_component(Counter("acme.count"), FakeGenerator(E), inputs={"position": vec3s(E), "foo": vec3s(E)})
    with pytest.raises(TypeError, match="expected a component .*got a object"):
        tools.check_component(object(), FakeGenerator(E))


def test_check_component_refuses_a_generator_a_course_drives():
    course = Course.track(TrackGenConfig(num_envs=E, device="cpu"), checkpoint_spacing=0.6, seeds=1)
    before = course.result.centerline.numpy().copy()
    with pytest.raises(ValueError, match="a Course drives this one"):
        tools.check_component(tools.Localizer(), course.generator, inputs={"position": vec3s(E)})
    assert (course.result.centerline.numpy() == before).all()
