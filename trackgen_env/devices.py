"""Device resolution shared by configs and envs."""

from __future__ import annotations

import warp as wp

__all__ = ["resolve_device"]


def resolve_device(device=None) -> str:
    """A Warp device name: ``None`` means ``"cuda:0"`` when Warp sees a GPU, else ``"cpu"``.

    Raises:
        ValueError: ``device`` names no device Warp knows (the message lists them).
    """
    if device is None:
        return "cuda:0" if wp.get_cuda_device_count() > 0 else "cpu"
    try:
        return str(wp.get_device(device))
    except Exception as exc:  # Warp raises RuntimeError/ValueError depending on the name
        names = [str(d) for d in wp.get_devices()]
        raise ValueError(f"device must be one of {names} or None, got {device!r}") from exc
