"""The host side of a course env's step: the action in, the outputs out, as NumPy arrays or torch views.

:class:`EnvIO` holds no simulation: it takes the env's stable device buffers (action,
observation, reward, termination, info arrays) and

* checks an action and writes it into the action buffer (on CUDA through a pinned staging
  array; a torch tensor on the env's device is copied on the device, without a host round trip);
* returns the step's outputs: fresh NumPy copies (on CUDA one wait for all the copies), or
  zero-copy torch views of the buffers (``output="torch"``);
* with torch outputs on CUDA, launches the env's work on torch's current stream
  (:meth:`EnvIO.stream_scope`), so that the views are ordered with torch's work.
"""

from __future__ import annotations

import contextlib

import numpy as np
import warp as wp

__all__ = ["EnvIO", "OUTPUTS", "check_output"]

#: The output types of ``step()`` / ``reset()``.
OUTPUTS = ("numpy", "torch")


def check_output(output: str) -> str:
    """``"numpy"`` or ``"torch"`` (which needs PyTorch installed).

    Raises:
        ValueError: another value.
        ImportError: ``"torch"`` without PyTorch.
    """
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
    if output == "torch":
        try:
            import torch  # noqa: F401
        except ImportError as exc:
            raise ImportError('output="torch" needs PyTorch (pip install "trackgen_env[torch]")') from exc
    return output


class EnvIO:
    """The action input and the outputs of one env (see the module docstring).

    Args:
        device: the env's ``wp.Device``.
        output: ``"numpy"`` or ``"torch"``.
        action: the stable ``[E]`` (vector dtype) or ``[E, A]`` float32 action array.
        action_dim: ``A``; ``action_labels``: the action's components, for error messages.
        obs, reward, terminated, truncated: the ``[E, D]`` / ``[E]`` output arrays.
        info: ``{name: [E] array}``, the per-env info arrays.
        final_obs, final_info: SAME_STEP's copies of the ended step's obs and info (None / ``{}`` otherwise).
    """

    def __init__(self, *, device, output: str, action: wp.array, action_dim: int, action_labels: str,
                 obs: wp.array, reward: wp.array, terminated: wp.array, truncated: wp.array, info: dict,
                 final_obs: wp.array | None, final_info: dict):
        self.device = device
        self.num_envs = obs.shape[0]
        self.action, self.action_dim, self.action_labels = action, action_dim, action_labels
        self.obs, self.reward, self.terminated, self.truncated, self.info = obs, reward, terminated, truncated, info
        self.final_obs, self.final_info = final_obs, final_info
        # the action goes in through a host array: on the CPU the device array itself, on
        # CUDA a pinned staging array copied in before each replay (an event guards its reuse)
        self._action_host = action if device.is_cpu else wp.zeros_like(action, device="cpu", pinned=True)
        self._action_view = self._action_host.numpy().view(np.float32).reshape(self.num_envs, action_dim)
        self._action_copied = None if device.is_cpu else wp.Event(device)
        self._torch = self._torch_views() if output == "torch" else None
        self._streams = {}  # torch CUDA stream handle -> wp.Stream
        self._pinned: dict[int, wp.array] = {}  # id(device array) -> its pinned host mirror (NumPy output on CUDA)

    # -- streams -----------------------------------------------------------------------------
    def stream_scope(self):
        """Torch output on CUDA: launch on torch's current stream, so that the views are ordered with torch's work."""
        if self._torch is None or self.device.is_cpu:
            return contextlib.nullcontext()
        import torch

        current = torch.cuda.current_stream(wp.device_to_torch(self.device))
        if current.cuda_stream == 0:
            # torch's legacy default stream: Warp cannot record a graph on it, and Warp's own
            # default stream (blocking) is already ordered with it both ways
            return contextlib.nullcontext()
        stream = self._streams.get(current.cuda_stream)
        if stream is None:
            stream = self._streams[current.cuda_stream] = wp.stream_from_torch(current)
        return wp.ScopedStream(stream, sync_enter=False)

    # -- the action in -----------------------------------------------------------------------
    def write_actions(self, actions) -> None:
        """Check ``actions`` (``[E, A]`` real floats; NumPy, array-like or torch) and write them, clipped, into the action buffer.

        Raises:
            TypeError: not of a real floating dtype.
            ValueError: another shape, or (host arrays) NaN; the buffer is then unchanged.
        """
        if self._torch is not None and _is_torch(actions):
            # stays on the device: no host round trip, no sync; NaN is not checked (that would sync)
            if not actions.dtype.is_floating_point:
                raise TypeError(f"actions must be a real floating tensor (float32 preferred), got dtype {actions.dtype}")
            self._check_action_shape(tuple(actions.shape))
            self._torch["action"].copy_(actions, non_blocking=True)  # the dynamics kernels clip to [-1, 1]
            return
        a = self._check_actions(actions)
        if self._action_copied is not None:
            wp.synchronize_event(self._action_copied)  # the previous copy out of the staging array is done
        np.copyto(self._action_view, a)
        if self._action_host is not self.action:
            wp.copy(self.action, self._action_host)
            wp.record_event(self._action_copied)

    def _check_action_shape(self, shape) -> None:
        if shape != (self.num_envs, self.action_dim):
            raise ValueError(
                f"actions must have shape ({self.num_envs}, {self.action_dim}) {self.action_labels}, got {shape}"
            )

    def _check_actions(self, actions) -> np.ndarray:
        if _is_torch(actions):
            actions = actions.detach().cpu().numpy()
        a = np.asarray(actions)
        if a.dtype.kind != "f":
            raise TypeError(f"actions must be a real floating array (float32 preferred), got dtype {a.dtype}")
        self._check_action_shape(a.shape)
        nan = np.isnan(a)
        if nan.any():
            rows = np.flatnonzero(nan.any(axis=1))
            raise ValueError(f"actions hold NaN in env(s) {rows[:8].tolist()}{' ...' if rows.size > 8 else ''}; the env is unchanged")
        return np.clip(a, -1.0, 1.0).astype(np.float32, copy=False)

    # -- the outputs -------------------------------------------------------------------------
    def _torch_views(self) -> dict:
        import torch

        views = {"action": wp.to_torch(self.action), "obs": wp.to_torch(self.obs),
                 "reward": wp.to_torch(self.reward), "terminated": wp.to_torch(self.terminated),
                 "truncated": wp.to_torch(self.truncated),
                 "everyone": torch.ones(self.num_envs, dtype=torch.bool, device=wp.device_to_torch(self.device))}
        views["info"] = {name: wp.to_torch(a) for name, a in self.info.items()}
        if self.final_obs is not None:
            views["final_obs"] = wp.to_torch(self.final_obs)
            views["final_info"] = {name: wp.to_torch(a) for name, a in self.final_info.items()}
        return views

    def outputs(self, *, final: bool):
        """The step's 5-tuple; ``final``: add SAME_STEP's ``final_obs`` / ``final_info``."""
        if self._torch is not None:
            return self._torch_outputs(final)
        arrays = [self.obs, self.reward, self.terminated, self.truncated, *self.info.values()]
        if final:
            arrays += [self.final_obs, *self.final_info.values()]
        host = iter(self._to_host(arrays))
        obs, reward, terminated, truncated = next(host), next(host), next(host), next(host)
        info = {}
        everyone = np.ones(self.num_envs, dtype=bool)
        for name in self.info:
            info[name] = next(host)
            info["_" + name] = everyone.copy()
        if final:
            done = terminated | truncated
            final_obs = next(host)
            if done.any():  # as Gymnasium's SyncVectorEnv: the keys only when an env ended
                info["final_obs"] = final_obs
                info["_final_obs"] = done
                final_info = {}
                for name in self.final_info:
                    final_info[name] = next(host)
                    final_info["_" + name] = done.copy()
                info["final_info"] = final_info
                info["_final_info"] = done.copy()
        return obs, reward, terminated, truncated, info

    def masked_reset_outputs(self, mask: np.ndarray):
        """``(obs, info)`` of a masked reset: as Gymnasium's SyncVectorEnv, the info masks are ``mask``."""
        obs, _, _, _, info = self.outputs(final=False)
        reset = mask if self._torch is None else self._torch["everyone"].new_tensor(mask)
        for name in self.info:
            info["_" + name] = reset.copy() if self._torch is None else reset
        return obs, info

    def _to_host(self, arrays: list) -> list[np.ndarray]:
        """Fresh NumPy copies of ``arrays``. On CUDA: asynchronous copies into pinned host
        mirrors (allocated once), one wait for all of them, then a host copy each, so that
        an array returned earlier is never overwritten by a later step."""
        if self.device.is_cpu:
            return [a.numpy().copy() for a in arrays]
        mirrors = []
        for a in arrays:
            mirror = self._pinned.get(id(a))
            if mirror is None:
                mirror = self._pinned[id(a)] = wp.empty(a.shape, dtype=a.dtype, device="cpu", pinned=True)
            wp.copy(mirror, a)
            mirrors.append(mirror)
        wp.synchronize_stream(wp.get_stream(self.device))
        return [m.numpy().copy() for m in mirrors]

    def _torch_outputs(self, final: bool):
        t = self._torch
        info = {}
        for name, view in t["info"].items():
            info[name] = view
            info["_" + name] = t["everyone"]
        if final:
            # always present (whether an env ended is not known on the host without a sync)
            done = t["terminated"] | t["truncated"]
            info["final_obs"] = t["final_obs"]
            info["_final_obs"] = done
            final_info = {}
            for name, view in t["final_info"].items():
                final_info[name] = view
                final_info["_" + name] = done
            info["final_info"] = final_info
            info["_final_info"] = done
        return t["obs"], t["reward"], t["terminated"], t["truncated"], info


def host_bool_mask(mask):
    """A bool torch tensor (on any device) -> its NumPy copy (one host copy); anything else as given.

    Raises:
        TypeError: a torch tensor of another dtype.
    """
    if not _is_torch(mask):
        return mask
    if str(mask.dtype) != "torch.bool":
        raise TypeError(f"options['reset_mask'] must be a bool NumPy array or a bool torch tensor, got {mask.dtype}")
    return mask.detach().cpu().numpy()


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "dtype") and hasattr(x, "is_floating_point")
