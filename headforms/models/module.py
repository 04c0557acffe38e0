"""A live transformers model as a :class:`~headforms.models.source.ModelSource`: its own config,
the architecture row of its ``model_type``, the checkpoint scheme of that row and a reader of
its state dict (:class:`headforms.readers.module.ModuleReader`).

Extraction then reads it exactly as it reads a checkpoint that ``save_pretrained`` wrote from
the same weights (the same tensor names, the same per-family split, RoPE frequencies and norm
gains), so a record of a training run and an analysis of its checkpoint cannot disagree.
"""

from __future__ import annotations

from typing import Any

from ..architectures import architecture_for, hf_scheme
from ..errors import ModelSpecError
from ..readers.module import ModuleReader
from .source import ModelSource

LIVE_KIND = "live"
"""The ``source_kind`` of a model read from memory while it trains."""


def unwrapped(model: Any) -> Any:
    """The transformers model inside ``model`` (DDP's and accelerate's ``.module``), or a
    one-line error for a module without a transformers config."""
    inner = model
    for _ in range(4):  # DDP around a compiled model around the model, at most
        if getattr(inner, "config", None) is not None:
            return inner
        inner = getattr(inner, "module", None) or getattr(inner, "_orig_mod", None)
        if inner is None:
            break
    raise ModelSpecError(
        f"{type(model).__name__} is not a transformers model (it has no .config): headforms "
        "reads a model's Q/K weights by its config's architecture"
    )


def module_source(model: Any, name: str | None = None) -> ModelSource:
    """The source of a live model (``name``: how its card names it; default the config's
    ``name_or_path``, else its class). Reads nothing yet: tensors are read by extraction."""
    model = unwrapped(model)
    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    arch = architecture_for(str(getattr(text, "model_type", "")))
    label = name or str(getattr(config, "name_or_path", "") or type(model).__name__)
    parameters = list({id(p): p for p in model.parameters()}.values())  # tied weights once
    return ModelSource(
        spec=label,
        display_name=label,
        kind=LIVE_KIND,
        config=text,
        arch=arch,
        reader=ModuleReader(model),
        fingerprint="",
        scheme=hf_scheme(arch),
        files=[],
        all_weights=False,
        weight_bytes=sum(p.numel() * p.element_size() for p in parameters),
        n_parameters=sum(p.numel() for p in parameters),
    )


def read_names(source: ModelSource) -> list[str]:
    """The tensors extraction reads of ``source`` (every layer's Q/K weights, biases and norm
    gains that it has), in layer order: what :func:`gathered_source` gathers."""
    from ..architectures import shapes_from_config
    from .extract import TensorIndex

    index = TensorIndex.for_source(source)
    patterns = [p for p in source.scheme.patterns.values() if p is not None]
    layers = range(shapes_from_config(source.config).n_layers)
    return [index.name(p, layer) for layer in layers for p in patterns if index.has(p, layer)]


def gathered_source(model: Any, name: str | None = None) -> ModelSource:
    """:func:`module_source` with its sharded Q/K tensors (``DTensor``: FSDP2, tensor
    parallelism) gathered now, a collective that every rank of the run calls in turn; a model
    held whole on each rank (one process, DDP) gathers nothing."""
    source = module_source(model, name)
    reader = source.reader
    assert isinstance(reader, ModuleReader)
    reader.gather(read_names(source))
    return source
