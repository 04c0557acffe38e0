"""The result store: where analyses live between runs, and the rules that keep them honest.

- :mod:`.paths`: the cache directory (``$HEADFORMS_CACHE_DIR``).
- :mod:`.keys`: the one cache key function: weights' fingerprint + options + a hash of the
  source code that computes results, so a code change can never serve stale numbers.
- :mod:`.results`: entries in open formats (a zip of JSON and ``.npz`` files), checksummed and
  committed atomically; anything unreadable, damaged or of another format version is a miss.
- :mod:`.locks`: one writer per key across threads and processes (``filelock``).
- :mod:`.files`: the one atomic file writer.
"""

from .files import write_atomic
from .keys import cache_key, code_version
from .locks import key_lock
from .paths import CACHE_DIR_ENV, cache_dir
from .results import Record, ResultStore

__all__ = [
    "CACHE_DIR_ENV",
    "Record",
    "ResultStore",
    "cache_dir",
    "cache_key",
    "code_version",
    "key_lock",
    "write_atomic",
]
