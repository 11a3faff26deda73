"""onnxopt.cuda: a model on an NVIDIA GPU through onnxopt's CUDA runtime.

    sess = onnxopt.cuda.Session("model.onnx")          # read, shapes inferred, weights uploaded
    out = sess.run({"x": numpy_array})                  # {name: numpy array}
    out = sess.run({"x": torch_tensor_on_cuda})         # DLPack: no host round trip

Inputs are numpy arrays (copied to the device through pinned staging buffers) or objects with
`__dlpack__` on this session's CUDA device (torch, cupy, jax arrays): those are exported with
`__dlpack__(stream=session.stream)`, so their producer's pending writes are ordered before the
run, and copied on the device into the plan's input buffer (one device-to-device copy, which
keeps a captured CUDA graph's pointers valid); they are not copied to the host. Outputs come back
as numpy arrays on the host. A session plans once per input signature and, with cuda_graphs,
replays a CUDA graph from its third run at a signature. Runs are serialized (one at a time per
session); the GIL is released during a run.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional

from . import _core, _source
from ._arrays import result_from_core, to_core

available: bool = bool(_core.has_cuda)
"""Whether this build of onnxopt has the CUDA runtime (a device may still be missing)."""

_KDL_CUDA = 2  # DLDeviceType: kDLCUDA
_KDL_CUDA_MANAGED = 13


def _on_cuda(value: Any) -> bool:
    device = getattr(value, "__dlpack_device__", None)
    if device is None:
        return False
    kind, _ = device()
    return int(kind) in (_KDL_CUDA, _KDL_CUDA_MANAGED)


class Session:
    """A model prepared for one GPU: `Session(model, device=0, cuda_graphs=True)`.

    model: a path, bytes or onnx.ModelProto (usually optimized with level=3, target="cuda").
    tf32: which float32 products may use TF32 tensor cores: "convolutions" (torch's default),
    "none" (float32 throughout) or "all" (matrix products too).
    tuning_cache: a file of timed kernel choices (convolution algorithms) that earlier sessions
    and `opt --tuning-cache` runs on this card made; new ones are added to it. None: time anew.
    Raises onnxopt.UnimplementedError where this build has no CUDA or there is no device.
    """

    def __init__(
        self,
        model: Any,
        device: int = 0,
        cuda_graphs: bool = True,
        tf32: str = "convolutions",
        tuning_cache: Optional[str] = None,
    ) -> None:
        self._core = _core.CudaSession(
            _source(model), device, cuda_graphs, tf32, "" if tuning_cache is None else os.fspath(tuning_cache)
        )

    def run(self, inputs: Mapping[str, Any]) -> Dict[str, Any]:
        """Runs the model; inputs by name (numpy arrays or CUDA DLPack tensors); returns
        {output name: numpy array}."""
        host: Dict[str, Any] = {}
        device: Dict[str, Any] = {}
        for name, value in inputs.items():
            if _on_cuda(value):
                is_contiguous = getattr(value, "is_contiguous", None)  # torch
                if is_contiguous is not None and not is_contiguous():
                    value = value.contiguous()
                device[name] = value.__dlpack__(stream=self._core.stream)
            else:
                host[name] = value
        arrays, strings = to_core(host)
        return result_from_core(self._core.run(arrays, strings, device))

    @property
    def input_names(self) -> List[str]:
        return list(self._core.input_names)

    @property
    def output_names(self) -> List[str]:
        return list(self._core.output_names)

    @property
    def device_name(self) -> str:
        """The GPU's name ("NVIDIA H200")."""
        return self._core.device_name

    @property
    def stream(self) -> int:
        """The session's CUDA stream (a cudaStream_t as an int)."""
        return int(self._core.stream)

    @property
    def summary(self) -> str:
        """The last run's plan: placements, arena, the nodes that ran on the CPU, CUDA graph."""
        return self._core.summary

    @property
    def cuda_graph_state(self) -> str:
        return self._core.cuda_graph_state

    @property
    def last_compute_ms(self) -> Optional[float]:
        """Device time of the last run's node steps (between input upload and output download)."""
        return self._core.last_compute_ms
