"""The host side of a course env's step: the action in, the outputs out, as NumPy arrays or torch views.

:class:`EnvIO` holds no simulation: it takes the env's stable device buffers (action,
observation, reward, termination, info arrays) and

* checks an action and writes it into the action buffer (on CUDA through a pinned staging
  array; a torch tensor on the env's device is copied on the device, without a host round trip);
* returns the step's outputs: fresh NumPy copies (on CUDA one wait for all the copies), or
  zero-copy torch views of the buffers (``output="torch"``); :class:`HostOutputs` holds the
  NumPy arrays, and :meth:`EnvIO.copy_outputs` writes one env's buffers into rows of a larger
  one (:class:`~trackgen_env.envs.sharded.ShardedVectorEnv` fills one set from all its shards);
* with torch outputs on CUDA, launches the env's work on torch's current stream
  (:meth:`EnvIO.stream_scope`), so that the views are ordered with torch's work.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import warp as wp

from ..core.checks import install_hint

__all__ = ["EnvIO", "HostOutputs", "OUTPUTS", "check_action", "check_action_shape", "check_actions", "check_output"]

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
            raise ImportError(f'output="torch" needs PyTorch: {install_hint("torch")}') from exc
    return output


def check_actions(actions, num_envs: int, action_dim: int, action_labels: str = "") -> np.ndarray:
    """``actions`` (``[E, A]`` real floats; NumPy, array-like or a torch tensor) as a host array, checked, not clipped.

    Raises:
        TypeError: not of a real floating dtype.
        ValueError: a shape other than ``(num_envs, action_dim)``, or NaN (the message names the envs).
    """
    a = _host_floats(actions, "actions")
    check_action_shape(a.shape, num_envs, action_dim, action_labels)
    if _may_hold_nan(a):
        nan = np.isnan(a)
        if nan.any():
            rows = np.flatnonzero(nan.any(axis=1))
            raise ValueError(f"actions hold NaN in env(s) {rows[:8].tolist()}{' ...' if rows.size > 8 else ''}; the "
                             f"env is unchanged")
    return a


def check_action(action, action_dim: int, action_labels: str = "") -> np.ndarray:
    """One env's ``action`` (``[A]`` real floats; NumPy, array-like or a torch tensor) as a host
    array, checked as :func:`check_actions` checks a batch (dtype, shape, NaN, in that order), not clipped.

    Raises:
        TypeError: not of a real floating dtype.
        ValueError: a shape other than ``(action_dim,)``, or NaN.
    """
    a = _host_floats(action, "action")
    if a.shape != (action_dim,):
        raise ValueError(f"action must have shape ({action_dim},) {action_labels}, got {a.shape}")
    if _may_hold_nan(a) and np.isnan(a).any():
        raise ValueError(f"action holds NaN, got {a.tolist()}; the env is unchanged")
    return a


def _host_floats(values, name: str) -> np.ndarray:
    """``values`` as a host array, refused (TypeError) unless of a real floating dtype."""
    if _is_torch(values):
        values = values.detach().cpu()
        if values.is_floating_point() and values.element_size() == 2:  # bfloat16 / float16: NumPy lacks the first
            values = values.float()
        values = values.numpy()
    a = np.asarray(values)
    if a.dtype.kind != "f":
        raise TypeError(f"{name} must be a real floating array (float32 preferred), got dtype {a.dtype}")
    return a


def _may_hold_nan(a: np.ndarray) -> bool:
    """One sum finds a NaN in a NaN-free batch without a temporary ``[E, A]`` mask (inf - inf
    also gives NaN: only then is the mask needed)."""
    with np.errstate(invalid="ignore"):
        return bool(np.isnan(a.sum()))


def check_action_shape(shape, num_envs: int, action_dim: int, action_labels: str = "") -> None:
    """Raises ValueError unless ``shape == (num_envs, action_dim)``."""
    if tuple(shape) != (num_envs, action_dim):
        raise ValueError(f"actions must have shape ({num_envs}, {action_dim}) {action_labels}, got {tuple(shape)}")


@dataclasses.dataclass
class HostOutputs:
    """One step's NumPy outputs of ``E`` envs before they are handed out (fresh arrays, written in place).

    Attributes:
        obs: ``[E, D]`` float32; ``reward``: ``[E]`` float32; ``terminated``, ``truncated``: ``[E]`` bool.
        info: ``{name: [E] array}``, the env's info arrays (their dtypes).
        final_obs, final_info: SAME_STEP's ended-step copies (None / ``{}`` without them).
    """

    obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    info: dict
    final_obs: np.ndarray | None = None
    final_info: dict = dataclasses.field(default_factory=dict)

    def arrays(self) -> list[np.ndarray]:
        """Every array, in :meth:`EnvIO.copy_outputs`'s order."""
        out = [self.obs, self.reward, self.terminated, self.truncated, *self.info.values()]
        if self.final_obs is not None:
            out += [self.final_obs, *self.final_info.values()]
        return out

    def step_tuple(self):
        """``(obs, reward, terminated, truncated, info)`` as Gymnasium's vector step: info holds each
        info array with its ``"_name"`` mask (all True); with ``final_obs``, and only when an env ended
        (as Gymnasium's SyncVectorEnv), ``"final_obs"`` / ``"final_info"`` masked by ``terminated | truncated``."""
        num_envs = self.reward.shape[0]
        info = {}
        for name, value in self.info.items():
            info[name] = value
            info["_" + name] = np.ones(num_envs, dtype=bool)
        if self.final_obs is not None:
            done = self.terminated | self.truncated
            if done.any():
                info["final_obs"] = self.final_obs
                info["_final_obs"] = done
                final_info = {}
                for name, value in self.final_info.items():
                    value[~done] = 0  # as SyncVectorEnv: the envs that did not end hold zeros
                    final_info[name] = value
                    final_info["_" + name] = done.copy()
                info["final_info"] = final_info
                info["_final_info"] = done.copy()
        return self.obs, self.reward, self.terminated, self.truncated, info

    def reset_tuple(self, mask: np.ndarray | None = None):
        """``(obs, info)`` of a reset; the info masks are all True, or (a masked reset, as SyncVectorEnv) ``mask``."""
        obs, _, _, _, info = dataclasses.replace(self, final_obs=None, final_info={}).step_tuple()
        if mask is not None:
            for name in self.info:
                info["_" + name] = mask.copy()
        return obs, info


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
        # NumPy views of the output buffers (CPU), or of their pinned host mirrors (CUDA), at first use
        self._views: list[np.ndarray] | None = None
        self._mirrors: list[wp.array] = []

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
        """Check ``actions`` (``[E, A]`` real floats; NumPy, array-like or torch) and write them, clipped, into the
        action buffer.

        Raises:
            TypeError: not of a real floating dtype.
            ValueError: another shape, or (host arrays) NaN; the buffer is then unchanged.
        """
        if self._torch is not None and _is_torch(actions):
            # stays on the device: no host round trip, no sync; NaN is not checked (that would sync)
            if not actions.dtype.is_floating_point:
                raise TypeError(f"actions must be a real floating tensor (float32 preferred), "
                                f"got dtype {actions.dtype}")
            check_action_shape(actions.shape, self.num_envs, self.action_dim, self.action_labels)
            self._torch["action"].copy_(actions, non_blocking=True)  # the dynamics kernels clip to [-1, 1]
            return
        self.write_checked_actions(check_actions(actions, self.num_envs, self.action_dim, self.action_labels))

    def write_checked_actions(self, actions: np.ndarray, rows: slice = slice(None)) -> None:
        """Write ``actions[rows]`` (a host array :func:`check_actions` accepted, of ``E`` rows here),
        clipped to [-1, 1], into the action buffer; NumPy releases the GIL for the clip of a large block."""
        if self._action_copied is not None:
            wp.synchronize_event(self._action_copied)  # the previous copy out of the staging array is done
        # clipped in the input's precision, then rounded into the float32 buffer: clip, then astype
        np.clip(actions[rows], -1.0, 1.0, out=self._action_view)
        if self._action_host is not self.action:
            wp.copy(self.action, self._action_host)
            wp.record_event(self._action_copied)

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
        out = self.new_outputs(self.num_envs, final=final)
        self.copy_outputs(out)
        return out.step_tuple()

    def masked_reset_outputs(self, mask: np.ndarray):
        """``(obs, info)`` of a masked reset: as Gymnasium's SyncVectorEnv, the info masks are ``mask``."""
        if self._torch is None:
            out = self.new_outputs(self.num_envs, final=False)
            self.copy_outputs(out)
            return out.reset_tuple(mask)
        obs, _, _, _, info = self._torch_outputs(final=False)
        reset = self._torch["everyone"].new_tensor(mask)
        for name in self.info:
            info["_" + name] = reset
        return obs, info

    def new_outputs(self, num_envs: int, *, final: bool) -> HostOutputs:
        """Fresh, unwritten NumPy arrays for the outputs of ``num_envs`` envs of this env's kind
        (dtypes and trailing shapes of its buffers); ``final``: with SAME_STEP's ``final_obs`` / ``final_info``.

        Raises:
            ValueError: ``final`` for an env without them (not SAME_STEP).
        """
        if final and self.final_obs is None:
            raise ValueError("final outputs (final_obs, final_info) exist only under autoreset_mode=SameStep")
        count = 4 + len(self.info) + (1 + len(self.final_info) if final else 0)
        empty = iter([np.empty((num_envs, *v.shape[1:]), dtype=v.dtype) for v in self._host_views()[:count]])
        obs, reward, terminated, truncated = next(empty), next(empty), next(empty), next(empty)
        info = {name: next(empty) for name in self.info}
        if not final:
            return HostOutputs(obs, reward, terminated, truncated, info)
        return HostOutputs(obs, reward, terminated, truncated, info, next(empty),
                           {name: next(empty) for name in self.final_info})

    def copy_outputs(self, out: HostOutputs, rows: slice = slice(None)) -> None:
        """Copy this env's output buffers into ``out``'s rows ``rows`` (``E`` rows; all of them by default).

        NumPy releases the GIL for each copy of a large block, so shards in threads copy out in
        parallel. On CUDA: asynchronous copies into pinned host mirrors (allocated once), one
        wait for all of them, then the host copies.
        """
        dsts = out.arrays()  # the first of the buffers (a reset's outputs under SAME_STEP: not the final ones)
        views = self._host_views()[:len(dsts)]
        if not self.device.is_cpu:
            for mirror, a in zip(self._mirrors, self._buffers()[:len(dsts)]):
                wp.copy(mirror, a)
            wp.synchronize_stream(wp.get_stream(self.device))
        for dst, src in zip(dsts, views):
            np.copyto(dst[rows], src)

    def _buffers(self) -> list[wp.array]:
        """The output buffers, in :meth:`HostOutputs.arrays`'s order."""
        arrays = [self.obs, self.reward, self.terminated, self.truncated, *self.info.values()]
        if self.final_obs is not None:
            arrays += [self.final_obs, *self.final_info.values()]
        return arrays

    def _host_views(self) -> list[np.ndarray]:
        """NumPy views of the output buffers (on CUDA of their pinned host mirrors), made once."""
        if self._views is None:
            if self.device.is_cpu:
                self._views = [a.numpy() for a in self._buffers()]
            else:
                self._mirrors = [wp.empty(a.shape, dtype=a.dtype, device="cpu", pinned=True) for a in self._buffers()]
                self._views = [m.numpy() for m in self._mirrors]
        return self._views

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
                view.masked_fill_(~done, 0)  # as SyncVectorEnv: the envs that did not end hold zeros
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
        raise TypeError(f"options['reset_mask'] must be a bool NumPy array or a bool torch tensor, got a torch tensor "
                        f"of dtype {mask.dtype}")
    return mask.detach().cpu().numpy()


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "dtype") and hasattr(x, "is_floating_point")
