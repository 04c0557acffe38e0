"""The stores: where the two stages' results live between runs, and the rules that keep them
honest.

- :mod:`.paths`: the cache directory (``$HEADFORMS_CACHE_DIR``).
- :mod:`.keys`: the keys of each stage: extraction (weights' fingerprint + extraction code)
  and forms (factors' key + options + forms code), so a code change can never serve stale
  numbers, and a new metric or RoPE position never reads weights again.
- :mod:`.factors`: the factor store (per-layer safetensors + JSON, bounded, committed by one
  rename).
- :mod:`.results`: metrics and baselines in open formats (a zip of JSON and ``.npz`` files),
  checksummed and committed atomically; anything unreadable, damaged or of another format
  version is a miss.
- :mod:`.locks`: one writer per key across threads and processes (``filelock``).
- :mod:`.files`: the one atomic file writer.
"""

from .factors import DamagedFactors, FactorStore, StoredFactors
from .files import write_atomic
from .keys import cache_key, code_version, factors_key, metrics_key
from .location import cache_dir
from .locks import key_lock
from .records import Record, ResultStore

__all__ = [
    "DamagedFactors",
    "FactorStore",
    "Record",
    "ResultStore",
    "StoredFactors",
    "cache_dir",
    "cache_key",
    "code_version",
    "factors_key",
    "key_lock",
    "metrics_key",
    "write_atomic",
]
