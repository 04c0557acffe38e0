"""A config.json's attention fields as transformers reads them, kept so that a later process
needs no transformers.

transformers reads a config.json with its defaults (GQA heads, head size, RoPE parameters and
their per-layer types); getting its config class imports torch (about 3.5 s of a cold process,
benchmarks/README.md). :func:`config_facts` asks transformers once per config and transformers
version, and keeps the values the extraction reads (:data:`FACT_NAMES`) in the result store; a
process that opens a checkpoint of the same config (the same model again, another RoPE
position, a survey's worker, a hosted worker) reads them back without importing transformers.

:class:`ConfigFacts` answers those names as transformers' config does (a name transformers' config
lacks is lacking here too) and any other name, and :meth:`ConfigFacts.to_transformers`, from
the transformers config built on first use: the facts never guess a default. Tests compare every
value with transformers' config for every supported family.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from ..architectures import CONFIG_FIELDS, SHAPE_LIMITS
from .configs import transformers_config
from .rope import KEPT_FREQUENCIES, initialised_frequencies, rope_layer_type, rope_parameters

FACT_NAMES = (
    "model_type",
    *(name for names in CONFIG_FIELDS.values() for name in names),
    "rope_parameters",
    "layer_types",
    "partial_rotary_factor",
)
"""The config attributes the extraction reads (:mod:`headforms.architectures`,
:mod:`headforms.models.rope`, :mod:`headforms.models.extract`); the shapes by every name
:data:`~headforms.architectures.CONFIG_FIELDS` tries."""
KEPT_NAMES = (*FACT_NAMES, KEPT_FREQUENCIES, "rope_freq_divisors")
"""Every name the facts answer themselves (present or lacking), never from transformers
(``rope_freq_divisors``: a GGUF file's, never a config.json's)."""
RECORD_KIND = "config-facts"
_BUILDING = threading.Lock()


class ConfigFacts:
    """The :data:`FACT_NAMES` of a transformers config, answered without transformers; any other
    attribute from the transformers config itself (built on first use)."""

    def __init__(
        self, values: dict[str, Any], fields: dict[str, Any], label: str, built: Any = None
    ):
        self._values = values
        self._fields = fields
        self._label = label
        self._built = built

    @classmethod
    def of(cls, config: Any, fields: dict[str, Any], label: str) -> ConfigFacts:
        """The facts of a transformers config (read from ``fields``)."""
        values = {name: getattr(config, name) for name in FACT_NAMES if hasattr(config, name)}
        frequencies = _initialised(config)
        if frequencies:
            values[KEPT_FREQUENCIES] = frequencies
        return cls(values, fields, label, config)

    def to_transformers(self) -> Any:
        """transformers' config of the same fields (RoPE initialisers other than default)."""
        with _BUILDING:  # layers ask from several threads; transformers imports once
            if self._built is None:
                self._built = transformers_config(self._fields, self._label)
        return self._built

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values")
        if values is None or name.startswith("__"):
            raise AttributeError(name)  # unpickling, copying: no fallback before __init__
        if name in values:
            return values[name]
        if name in KEPT_NAMES:  # transformers' config has no such attribute either
            raise AttributeError(name)
        return getattr(self.to_transformers(), name)


def _initialised(config: Any) -> dict[str, list[float]]:
    """transformers' initialised RoPE frequencies per layer type (``""``: shared) of the layers
    whose RoPE type is not default; empty when there are none or they cannot be computed here
    (the extraction then computes them, and says what is wrong)."""
    layers = getattr(config, CONFIG_FIELDS["n_layers"][0], None)
    if not isinstance(layers, int) or not 0 < layers <= SHAPE_LIMITS["layers"]:
        return {}
    kept: dict[str, list[float]] = {}
    try:
        for layer in range(layers):
            if rope_parameters(config, layer).get("rope_type", "default") == "default":
                continue
            layer_type = rope_layer_type(config, layer) or ""
            if layer_type not in kept:
                kept[layer_type] = initialised_frequencies(config, layer).tolist()
    except Exception:  # transformers refuses these parameters: the extraction reports it
        return {}
    return kept


def facts_key(fields: dict[str, Any]) -> str | None:
    """The store key of a config's facts: its fields, transformers' version and the extraction
    code (None when the fields are not JSON)."""
    from importlib.metadata import version

    from ..store.keys import cache_key

    try:
        blob = json.dumps(fields, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    subject = "config:" + hashlib.sha256(blob.encode()).hexdigest()
    return cache_key(subject, {"transformers": version("transformers")}, "extraction")


def _storable(values: dict[str, Any]) -> bool:
    """Whether ``values`` come back from JSON exactly as they are."""
    try:
        return json.loads(json.dumps(values, allow_nan=False)) == values
    except (TypeError, ValueError):
        return False


def config_facts(fields: dict[str, Any], label: str) -> Any:
    """The config of a config.json's ``fields``: its :class:`ConfigFacts` from the store when
    transformers read the same fields before, else transformers' config read now (errors as
    :func:`~headforms.models.configs.transformers_config`), its facts stored for next time.
    The store is best effort: one that cannot be read or written costs only the time."""
    from ..store.records import Record, ResultStore

    key = facts_key(fields)
    store = None
    if key is not None:
        try:
            store = ResultStore()
            record = store.get(key, RECORD_KIND)
        except Exception:  # an unusable cache directory: read the config with transformers
            record = None
        if record is not None and isinstance(record.meta.get("values"), dict):
            store.close()
            return ConfigFacts(record.meta["values"], fields, label)
    config = transformers_config(fields, label)
    facts = ConfigFacts.of(config, fields, label)
    if store is not None:
        try:
            if _storable(facts._values):
                store.put(key, Record(RECORD_KIND, {"values": facts._values}))
        except Exception:  # a full or read-only cache: the facts are only not kept
            pass
        finally:
            store.close()
    return facts
