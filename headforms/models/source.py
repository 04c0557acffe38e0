"""Opening a located model: its config, its architecture row and a reader of its tensors.

This is the first step that reads weights' headers (and, for the hub, downloads the chosen
files): the engine calls it only on a cache miss. GGUF files carry their config in their
metadata (no transformers import); transformers checkpoints get their config class from
transformers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..architectures import (
    Architecture,
    TensorScheme,
    architecture_for,
    architecture_for_gguf,
    gguf_scheme,
    hf_scheme,
    shapes_from_config,
)
from ..errors import HeadformsError
from ..readers import (
    GGUFReader,
    SafetensorsReader,
    TensorReader,
    TorchBinReader,
    read_safetensors_header,
)
from ..readers.remote import RemoteSafetensorsReader, ranges_enabled
from ..sources import Located, fetch, locate
from .config_facts import config_facts
from .configs import gguf_config, transformers_config


@dataclass
class ModelSource:
    """Everything the engine needs to read one model's attention weights.

    ``scheme`` says how this checkpoint names and stores the attention tensors; extraction
    turns them into one convention (Hugging Face row order, full QK-norm gains).
    ``all_weights``: ``reader`` covers every weight of the model (parameter counts).
    """

    spec: str
    display_name: str
    kind: str
    config: Any
    arch: Architecture
    reader: TensorReader
    fingerprint: str
    scheme: TensorScheme
    files: list[Path] = field(default_factory=list)
    all_weights: bool = True
    weight_bytes: int = 0
    n_parameters: int | None = None
    """Parameters of the whole model when ``reader`` does not cover it (else counted from it)."""


def open_model(target: str | Located, use_store: bool = True) -> ModelSource:
    """Open a located model (downloading hub files if needed, within its policy), or a spec's
    text located with nothing refused. A config.json is read through its facts in the result
    store (:func:`.config_facts`) unless ``use_store`` is False (transformers reads it)."""
    located = locate(target) if isinstance(target, str) else target
    if located.format == "gguf":
        return _open_gguf(located)
    # Range reads only for files that are not on this machine: offline, or with the snapshot
    # already in the hub cache, the local files serve (and no request is made).
    remote = (
        located.hub is not None
        and not located.hub.offline
        and ranges_enabled()
        and located.format == "safetensors"
        and any(f.path is None for f in located.weights)
    )
    fields, label = located.config or {}, f"{located.display_name}: config.json"
    config = config_facts(fields, label) if use_store else transformers_config(fields, label)
    arch = architecture_for(config.model_type)
    shapes_from_config(config)  # absurd declared shapes are refused before any download
    if not remote:
        located = fetch(located)
    reader: TensorReader
    paths = [f.path for f in located.weights if f.path is not None]
    if remote:  # headers + Q/K byte ranges only (HEADFORMS_HUB_RANGES)
        assert located.hub is not None
        reader = RemoteSafetensorsReader.for_hub(
            located.hub.repo_id, located.hub.commit, [f.name for f in located.weights]
        )
    elif located.format == "safetensors":
        reader = SafetensorsReader(paths)
    else:
        reader = TorchBinReader(paths)
    return ModelSource(
        spec=located.spec,
        display_name=located.display_name,
        kind=located.kind,
        config=config,
        arch=arch,
        reader=reader,
        fingerprint=located.fingerprint,
        scheme=hf_scheme(arch),
        files=paths,
        all_weights=located.complete and not remote,
        weight_bytes=located.weight_bytes or 0,
        n_parameters=None if located.complete else _local_shard_parameters(located),
    )


def _local_shard_parameters(located: Located) -> int | None:
    """Parameters of every shard of a local sharded safetensors checkpoint, from their headers
    (no weight is read); None for the hub or .bin shards (their headers are not at hand), or
    when a shard the analysis does not need has no readable header (it is not an error)."""
    index = located.index_file
    if located.hub is not None or located.format != "safetensors" or index is None:
        return None
    if index.path is None or located.confined:
        # Confined by a policy: the other shards were neither size-checked nor checked to lie
        # within its roots.
        return None
    from ..sources.files import MAX_INDEX_BYTES, parse_index, read_small

    shards = sorted(set(parse_index(read_small(index.path, MAX_INDEX_BYTES), index.name).values()))
    total = 0
    for shard in shards:
        try:
            header = read_safetensors_header(index.path.parent / shard)
        except HeadformsError:
            return None
        total += sum(
            math.prod(info["shape"]) for name, info in header.items() if name != "__metadata__"
        )
    return total


def _open_gguf(located: Located) -> ModelSource:
    path = located.weights[0].path
    assert path is not None
    reader = GGUFReader(path)
    gguf_arch = str(reader.metadata.get("general.architecture", ""))
    arch = architecture_for_gguf(gguf_arch)
    name = reader.metadata.get("general.name")
    return ModelSource(
        spec=located.spec,
        display_name=located.display_name if located.kind == "bundled" else str(name or path.stem),
        kind=located.kind,
        config=gguf_config(reader, arch, gguf_arch, path),
        arch=arch,
        reader=reader,
        fingerprint=located.fingerprint,
        scheme=gguf_scheme(arch),
        files=[path],
        all_weights=True,
        weight_bytes=located.weight_bytes or 0,
    )
