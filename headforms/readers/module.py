"""A live PyTorch module's tensors, read where they live: the :class:`TensorReader` of a model
that is training, so that the same per-family extraction as for a checkpoint reads it.

The names are the module's state-dict names (what ``save_pretrained`` writes into a checkpoint),
less the parts that wrappers insert (``torch.compile``'s ``_orig_mod.``, activation
checkpointing's ``_checkpoint_wrapped_module.``); a leading ``module.`` (DDP) is an ordinary
prefix that extraction skips as it skips a checkpoint's. Nothing is copied until a tensor is
read, and then only that tensor moves to the CPU (from a GPU, or from its shards: a
``DTensor`` of FSDP2 or tensor parallelism is gathered with ``full_tensor()``, a collective that
every rank must run in the same order, so those are gathered up front by :meth:`gather`).
Models whose weights cannot be read as tensors are refused in one line: FSDP version 1 (flat
parameters), DeepSpeed ZeRO-3 (partitioned parameters), LoRA adapters (the form is the base
weight plus the adapters' product), weights left on the ``meta`` device (offloaded), quantized
integer storage.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import ModelSpecError

WRAPPER_PARTS = ("_orig_mod.", "_checkpoint_wrapped_module.")
"""Name parts that wrappers insert between a model's own names (dropped)."""

STORAGE_NAMES = {"float32": "f32", "float64": "f64", "bfloat16": "bf16", "float16": "f16"}
"""torch dtypes as a safetensors checkpoint of the same tensors names them."""


def clean_name(name: str) -> str:
    """A state-dict name without the parts wrappers insert (:data:`WRAPPER_PARTS`)."""
    for part in WRAPPER_PARTS:
        name = name.replace(part, "")
    return name


def _refuse_unreadable(module: Any) -> None:
    """One line for the sharding schemes whose parameters are not tensors of the model's
    shapes (the checkpoint written by such a run is read instead)."""
    for sub in module.modules():
        if type(sub).__name__ == "FullyShardedDataParallel":
            raise ModelSpecError(
                "a model wrapped in FSDP version 1 holds flat parameter shards, not its Q/K "
                "weights: use FSDP2 (fully_shard, fsdp_version 2) or record from checkpoints"
            )
    for parameter in module.parameters():
        if hasattr(parameter, "ds_id"):
            raise ModelSpecError(
                "a DeepSpeed ZeRO-3 model partitions its parameters (each rank holds a slice "
                "of none of its Q/K weights): use ZeRO stage 1 or 2, or record from checkpoints"
            )
        break


class ModuleReader:
    """The tensors of a live ``torch.nn.Module`` under its state-dict names (module doc)."""

    def __init__(self, module: Any):
        _refuse_unreadable(module)
        state = module.state_dict(keep_vars=True)  # references to the live tensors, no copy
        self._tensors: dict[str, Any] = {clean_name(k): v for k, v in state.items()}
        if any(".lora_A." in name for name in self._tensors):
            raise ModelSpecError(
                "a model with LoRA adapters: its forms are the base weights plus the adapters' "
                "product, which are not stored as one tensor; record a merged copy "
                "(peft's merge_and_unload) or its checkpoints"
            )
        self._gathered: dict[str, np.ndarray] = {}

    def names(self) -> list[str]:
        return list(self._tensors)

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._tensors[name].shape)

    def storage_dtype(self, name: str) -> str:
        kind = str(self._tensors[name].dtype).removeprefix("torch.")
        return STORAGE_NAMES.get(kind, kind)

    def sharded(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` held as ``DTensor`` shards (read by :meth:`gather` first)."""
        return [name for name in names if _is_dtensor(self._tensors[name])]

    def gather(self, names: Iterable[str]) -> None:
        """Gather the ``DTensor`` shards of ``names`` now, in the order given (a collective:
        every rank calls this with the same names); plain tensors are left to be read."""
        for name in self.sharded(names):
            self._gathered[name] = self._numpy(name, self._tensors[name].full_tensor())

    def read(self, name: str) -> np.ndarray:
        """One tensor as float64 (exact)."""
        return self.read_exact(name).astype(np.float64)

    def read_exact(self, name: str) -> np.ndarray:
        """One tensor copied to the CPU as float32 (float64 for float64 weights; bf16 and f16
        widened exactly), detached from autograd."""
        if name in self._gathered:
            return self._gathered[name]
        tensor = self._tensors[name]
        if _is_dtensor(tensor):
            raise ModelSpecError(f"tensor {name!r} is sharded (a DTensor): gather it first")
        return self._numpy(name, tensor)

    def _numpy(self, name: str, tensor: Any) -> np.ndarray:
        import torch

        if tensor.device.type == "meta":
            raise ModelSpecError(
                f"tensor {name!r} is on the meta device (offloaded): its values are not in "
                "memory; record from checkpoints instead"
            )
        if not tensor.is_floating_point():
            raise ModelSpecError(
                f"tensor {name!r} is stored as {self.storage_dtype(name)} (a quantized model): "
                "only float weights (f32, f64, bf16, f16) are read"
            )
        wide = torch.float64 if tensor.dtype == torch.float64 else torch.float32
        with torch.no_grad():
            copy = tensor.detach().to(device="cpu", dtype=wide, copy=True)
        return copy.numpy()


def _is_dtensor(tensor: Any) -> bool:
    """Whether ``tensor`` is a ``torch.distributed.tensor.DTensor`` (a shard of a larger one)."""
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # a torch built without distributed support has no shards
        return False
    return isinstance(tensor, DTensor)
