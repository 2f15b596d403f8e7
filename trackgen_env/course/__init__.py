"""Courses: a generator plus an ordered list of components, bound, stepped and regenerated as one.

``Course`` (with the presets ``Course.track`` / ``Course.gates`` and ``Course.from_config``),
``CourseConfig`` (a course as flat data), ``StepResult`` (what ``Course.step()`` returns) and
``memory`` (the memory of a construction, measured or estimated before allocating).
See docs/courses.md and docs/composing-a-course.md.
"""

from . import memory
from .config import CourseConfig
from .course import POSITIONAL_INPUTS, Course
from .result import StepResult

__all__ = ["Course", "CourseConfig", "StepResult", "POSITIONAL_INPUTS", "memory"]
