"""The examples of the course pages run as written (on the CPU, with a small E)."""

from __future__ import annotations

import pathlib
import re

import pytest
import warp as wp

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


def _blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S)


def test_composing_a_course_examples_run_in_order():
    E = 4
    ns = {"pos": wp.zeros(E, dtype=wp.vec3, device="cpu"), "quat": wp.zeros(E, dtype=wp.quat, device="cpu"),
          "he": wp.full(E, wp.vec3(0.2, 0.1, 0.05), dtype=wp.vec3, device="cpu")}
    blocks = _blocks("composing-a-course.md")
    assert len(blocks) == 4
    build, signatures, binding, reading = blocks
    assert 'E, device = 64, None' in build
    exec(build.replace('E, device = 64, None', 'E, device = 4, "cpu"'), ns)
    exec(binding, ns)
    exec(reading, ns)
    assert ns["res"].get("collision") is None


@pytest.mark.parametrize("page", ["courses.md"])
def test_course_page_quick_start_runs(page):
    exec(_blocks(page)[0], {})


def test_the_producer_protocol_example_runs_as_written(tmp_path):
    """A generator of one's own (the page's only block), driven by a Course with built-in components."""
    import runpy

    blocks = _blocks("producer-protocol.md")
    assert len(blocks) == 1 and "..." not in blocks[0]
    path = tmp_path / "producer_example.py"  # from a file: Warp reads a kernel's source from its file
    path.write_text(blocks[0])
    ns = runpy.run_path(str(path))
    assert ns["course"].generator is ns["gen"]


def test_the_component_page_examples_run_and_the_env_loop_form_gives_the_same_offsets(tmp_path):
    """docs/writing-a-component.md: the example component, its env-loop form (``ctx.launch_step``)
    and the course block run as written; both forms give the same offsets, and the env-loop form
    skips the envs outside a masked step."""
    import runpy

    import numpy as np

    from trackgen_env import TrackGenConfig
    from trackgen_env.course import Course

    blocks = _blocks("writing-a-component.md")
    example, fast = blocks[1], blocks[2]
    path = tmp_path / "component_example.py"  # from a file: Warp reads a kernel's source from its file
    path.write_text(example + "\n" + fast)
    ns = runpy.run_path(str(path))
    E = 4
    cfg = TrackGenConfig(num_envs=E, device="cpu")
    pos = wp.array(np.zeros((E, 3), np.float32), dtype=wp.vec3, device="cpu")
    exec(blocks[3], {**ns, "Course": Course, "cfg": cfg, "pos": pos})
    plain = Course.track(cfg, checkpoint_spacing=0.6, extra=[ns["LookaheadComponent"](10)], seeds=2)
    quick = Course.track(cfg, checkpoint_spacing=0.6, extra=[ns["FastLookahead"](10)], seeds=2)
    start = plain.result.start_position.numpy()
    for course in (plain, quick):
        course.bind(position=wp.array(start, dtype=wp.vec3, device="cpu"))
    a, b = plain.step()["acme.lookahead"].offset.numpy(), quick.step()["acme.lookahead"].offset.numpy()
    assert np.array_equal(a, b) and np.abs(a).sum() > 0
    quick.components["acme.lookahead"].result.offset.zero_()
    mask = np.array([1, 0, 1, 0], np.int32)
    got = quick.step(mask=wp.array(mask, device="cpu"))["acme.lookahead"].offset.numpy()
    assert np.array_equal(got[mask == 1], a[mask == 1]) and not got[mask == 0].any()
