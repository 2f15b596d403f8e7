"""The course's own regeneration graphs (one per variant).

A *variant* is ``(advance, mask array)``: ``(False, None)`` is ``course.graph``; up to
:data:`MAX_VARIANTS` others get a graph of their own, keyed by the identity of the mask
array (a graph holds the mask's pointer, so the same array must be reused).
"""

from __future__ import annotations

import sys
import warnings

import warp as wp

__all__ = ["VariantGraphs", "MAX_VARIANTS", "load_kernel_modules"]

MAX_VARIANTS = 16


class VariantGraphs:
    """The recorded regeneration graphs of one course.

    ``lookup`` returns the graph of a variant, records it (``record(advance, mask)`` ->
    ``wp.Graph``) when new and a slot is left, and returns None (with one RuntimeWarning
    per course) once the variants are used up: the caller then runs the body eagerly.
    """

    def __init__(self):
        self.main: wp.Graph | None = None
        self._variants: dict[tuple[bool, int], tuple[wp.array, wp.Graph]] = {}
        self._warned = False

    def __len__(self) -> int:
        return len(self._variants)

    def lookup(self, advance: bool, mask: wp.array | None, record) -> wp.Graph | None:
        if not advance and mask is None:
            if self.main is None:
                self.main = record(advance, mask)
            return self.main
        key = (advance, id(mask))
        hit = self._variants.get(key)
        if hit is not None:
            return hit[1]
        if len(self._variants) >= MAX_VARIANTS:
            if not self._warned:
                self._warned = True
                warnings.warn(
                    f"this course already holds {MAX_VARIANTS} regeneration graphs besides course.graph; "
                    "further (advance, mask array) variants run eagerly: reuse the same mask array",
                    RuntimeWarning,
                    stacklevel=3,
                )
            return None
        graph = record(advance, mask)
        # the entry keeps the mask alive, so its id cannot be reused while the graph reads it
        self._variants[key] = (mask, graph)
        return graph


def load_kernel_modules(components, device) -> None:
    """Load the Warp module of every kernel the components' class modules define or import,
    except those a component lists in its ``unused_kernel_modules`` (module names).

    ``prepare`` never runs ``step`` (its inputs may be unbound), so this is what makes
    recording ``step()`` load nothing.
    """
    warp_modules = {}
    for c in components:
        found = {}
        for klass in type(c).__mro__:
            module = sys.modules.get(klass.__module__)
            if module is None:
                continue
            for value in vars(module).values():
                if isinstance(value, wp.Kernel):
                    found[value.module.name] = value.module
                elif isinstance(value, type(sys)) and not value.__name__.startswith(("warp", "numpy")):
                    # a kernel module imported whole (``from . import band_sdf``)
                    found.update({k.module.name: k.module for k in vars(value).values()
                                  if isinstance(k, wp.Kernel) and k.module.name == value.__name__})
        # a module this component's settings never launch (compiling one costs ~0.5 s cold)
        for name in getattr(c, "unused_kernel_modules", ()):
            found.pop(name, None)
        warp_modules.update(found)
    for module in warp_modules.values():
        wp.load_module(module, device=device)
