"""The one atomic file writer: readers see the old file or the whole new one, never a part."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomic(path: Path, content: bytes | Callable[[Path], None], mode: int = 0o644) -> Path:
    """Write ``content`` (bytes, or a function writing a given temporary path) to ``path``.

    The data goes to a temporary file in the same directory, is flushed to disk, and replaces
    ``path`` in one rename; on any error the temporary file is removed and ``path`` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        if callable(content):
            os.close(fd)
            content(tmp)
            with open(tmp, "rb") as written:  # flushed to disk like the bytes branch
                os.fsync(written.fileno())
        else:
            with os.fdopen(fd, "wb") as out:
                out.write(content)
                out.flush()
                os.fsync(out.fileno())
        os.chmod(tmp, mode)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
