"""``render_mode="human"``: a window showing the frames that ``render_mode="rgb_array"`` draws.

The envs draw their frames on the device (:mod:`trackgen_env.envs.render`); in human mode every
``step()`` and ``reset()`` shows those of the first :data:`HUMAN_ENVS` envs, tiled in a grid, in
a pygame window (as Gymnasium's own envs, CarRacing among them, show theirs) at the env's
``metadata["render_fps"]``. pygame is optional: ``pip install -e ".[human]"``.
"""

from __future__ import annotations

import math
import os
import sys
import warnings

import numpy as np

from ..core.checks import install_hint

__all__ = ["HUMAN_ENVS", "require_pygame", "tile", "Window"]

#: Envs a human-mode window shows (the first ones), in a square grid: 4 x 4.
HUMAN_ENVS = 16
_GAP = 2  # [pixels] between the tiles
_GAP_COLOUR = 64


def require_pygame():
    """The ``pygame`` module.

    Raises:
        ImportError: pygame is not installed (naming the extra that installs it).
    """
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # no greeting on the user's terminal
    try:
        import pygame
    except ImportError as exc:
        raise ImportError(f'render_mode="human" shows the frames in a pygame window, and pygame is not installed: '
                          f'{install_hint("human")}, or use render_mode="rgb_array" (render() returns the frames)'
                          ) from exc
    return pygame


def tile(frames: np.ndarray) -> np.ndarray:
    """``[n, H, W, 3]`` frames as one ``[rows * (H + 2) - 2, cols * (W + 2) - 2, 3]`` image: a grid of
    ``cols = ceil(sqrt(n))`` columns, row by row, 2 dark pixels between the tiles."""
    n, h, w, _ = frames.shape
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    out = np.full((rows * (h + _GAP) - _GAP, cols * (w + _GAP) - _GAP, 3), _GAP_COLOUR, dtype=np.uint8)
    for k in range(n):
        r, c = divmod(k, cols)
        out[r * (h + _GAP): r * (h + _GAP) + h, c * (w + _GAP): c * (w + _GAP) + w] = frames[k]
    return out


class Window:
    """A pygame window that shows one RGB image per :meth:`show`, at most ``fps`` a second.

    Args:
        title: the window's caption.
        fps: the most images a second (``show`` waits for the next frame's time, as Gymnasium's
            human mode runs at the env's ``render_fps``).

    Warns:
        UserWarning: a Linux machine without a display (neither ``DISPLAY`` nor ``WAYLAND_DISPLAY``
            set, nor ``SDL_VIDEODRIVER``): the window is drawn with SDL's ``dummy`` driver, where
            nothing can be seen (SDL's own fallback, ``offscreen``, loads EGL for a window no one sees).

    Raises:
        ImportError: pygame is not installed.
    """

    def __init__(self, title: str, fps: int):
        self._pygame = require_pygame()
        headless = (sys.platform.startswith("linux") and "SDL_VIDEODRIVER" not in os.environ
                    and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")))
        if headless:
            os.environ["SDL_VIDEODRIVER"] = "dummy"
            warnings.warn('render_mode="human": this machine has no display (neither DISPLAY nor WAYLAND_DISPLAY is '
                          'set), so the window cannot be seen; use render_mode="rgb_array" and write the frames to a '
                          'video (gymnasium.wrappers.vector.RecordVideo), or run where there is a display',
                          UserWarning, stacklevel=4)
        self._pygame.display.init()
        self.title, self.fps = title, fps
        self._screen = None
        self._clock = self._pygame.time.Clock()

    def show(self, image: np.ndarray) -> None:
        """Show an ``[H, W, 3]`` uint8 image (the window takes its size)."""
        pygame = self._pygame
        h, w = image.shape[:2]
        if self._screen is None or self._screen.get_size() != (w, h):
            self._screen = pygame.display.set_mode((w, h))
            pygame.display.set_caption(self.title)
        pygame.event.pump()  # keeps the window responsive
        self._screen.blit(pygame.surfarray.make_surface(np.ascontiguousarray(image.swapaxes(0, 1))), (0, 0))
        pygame.display.flip()
        self._clock.tick(self.fps)

    def close(self) -> None:
        """Close the window."""
        if self._screen is not None:
            self._screen = None
            self._pygame.display.quit()
