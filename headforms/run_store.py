"""A training run's store: every head's forms recorded while the model trains, one record per
step, in a directory that readers may read while it grows.

    DIR/headforms-run.json           the manifest: the model, its shapes, the options, the
                                     recording period; ``finished`` once the run has ended
    DIR/headforms-records/step-S.zip one record per step S: the analysis of the model's weights
                                     at that step (the per-head table and spectra, its card),
                                     in the result store's open format (a zip of JSON and .npz,
                                     :mod:`headforms.store.records`)

Every file is written whole or not at all (:func:`headforms.store.write_atomic`: a temporary
file renamed into place), so a run that crashes, or a reader that lists the directory while a
record is written, sees each record whole or absent; a record that cannot be read (damaged from
outside) is left out and counted. Records are immutable once written, except that a run resumed
from a checkpoint writes again the steps it trains again. The same directory may hold the
run's ``checkpoint-STEP`` folders: the store's files have names of their own.

:mod:`headforms.series` reads a run store as a series (a :class:`~headforms.series.Trajectory`
whose checkpoints are the records); :mod:`headforms.integrations` writes one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import time
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .bounded import ByteLRU
from .errors import CorruptFileError, HeadformsError, LimitError, OptionError
from .model_analysis import ModelAnalysis, analysis_from_record, analysis_record
from .options import AnalysisOptions
from .sources.files import open_regular
from .store import write_atomic
from .store.records import decode, encode

MANIFEST = "headforms-run.json"
RECORDS = "headforms-records"
FORMAT = "headforms.run"
FORMAT_VERSION = 1
RECORD_NAME = re.compile(r"^step-(\d{1,12})\.zip$")
"""A record's file name (temporary files start with a dot and never match)."""
RECORD_KIND = "analysis"
"""Records are analyses' store records (:func:`headforms.model_analysis.analysis_record`)."""

MAX_RECORDS = 10_000
"""Entries of a records folder looked at before it is refused (a run recorded every 50 steps
for 500,000 steps)."""
MAX_RECORD_BYTES = 256 * 2**20
"""Bytes of one record read at most (a model of 16,384 heads with 2n = 256 is about 80 MB)."""
MAX_MANIFEST_BYTES = 2**20

SHAPE_FIELDS = ("n_layers", "n_heads", "n_kv_heads", "head_dim", "model_dim")
"""The shapes every record of a run shares (model card fields)."""

_READ: ByteLRU[ModelAnalysis] = ByteLRU(256 * 2**20)
"""Records read in this process, by file, size and modification time (a live page reads the
store again at each new record: only the new ones are decoded)."""


@dataclass(frozen=True)
class RunManifest:
    """What a run store holds: the model (name and shapes), the options of its records, how
    often it records (None: when its loop calls), when it started and, once it has ended, its
    last step and when it finished."""

    model: str
    shapes: dict[str, int]
    rope_position: int
    fold_qk_norm: bool
    every: int | None
    started: float
    finished: int | None = None
    finished_at: float | None = None

    @property
    def options(self) -> AnalysisOptions:
        """The analysis options of every record."""
        return AnalysisOptions(self.rope_position, self.fold_qk_norm)

    def as_json(self) -> bytes:
        """The manifest file's bytes."""
        body = {"format": FORMAT, "version": FORMAT_VERSION, **asdict(self)}
        return json.dumps(body, indent=1).encode()


@dataclass(frozen=True)
class RecordFile:
    """One record's file, as listed: its step, path, size and modification time."""

    step: int
    path: Path
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class RunState:
    """A run store as listed now: its manifest and its records in step order."""

    directory: Path
    manifest: RunManifest
    records: tuple[RecordFile, ...]

    @property
    def steps(self) -> tuple[int, ...]:
        """The recorded steps, increasing."""
        return tuple(r.step for r in self.records)

    @property
    def live(self) -> bool:
        """Whether the run has not said it ended (it trains, or it stopped without ending)."""
        return self.manifest.finished is None

    @property
    def listing(self) -> tuple[tuple[int, int, int], ...]:
        """``(step, size, mtime_ns)`` of every record: changes when a record is written."""
        return tuple((r.step, r.size, r.mtime_ns) for r in self.records)


def is_run_store(directory: str | Path) -> bool:
    """Whether ``directory`` holds a run store (its manifest)."""
    return (Path(directory) / MANIFEST).is_file()


def read_manifest(directory: str | Path) -> RunManifest:
    """The manifest of the run store in ``directory``, or a one-line error."""
    path = Path(directory) / MANIFEST
    if path.is_symlink():
        raise CorruptFileError(f"{path}: a symbolic link, not a run store's own manifest")
    try:
        with open_regular(path) as handle:  # never a FIFO that blocks
            data = json.loads(handle.read(MAX_MANIFEST_BYTES + 1))
        if data.get("format") != FORMAT or data.get("version") != FORMAT_VERSION:
            raise ValueError(f"not a {FORMAT} manifest of version {FORMAT_VERSION}")
        fields = {k: data[k] for k in RunManifest.__dataclass_fields__ if k in data}
        manifest = RunManifest(**fields)
        shapes = {k: int(manifest.shapes[k]) for k in SHAPE_FIELDS}
        return replace(manifest, shapes=shapes)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, HeadformsError) as error:
        raise CorruptFileError(f"{path}: not a readable run store manifest ({error})") from None


def run_state(directory: str | Path) -> RunState:
    """The run store in ``directory`` as it is now (nothing decoded); one-line errors for a
    directory that holds none or too many records."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    found: list[RecordFile] = []
    folder = directory / RECORDS
    if folder.is_symlink():  # the writer makes a folder: a link could lead anywhere
        raise CorruptFileError(f"{folder}: a symbolic link, not a run store's own records")
    try:
        entries = os.scandir(folder)
    except FileNotFoundError:
        return RunState(directory, manifest, ())
    except OSError as error:
        raise OptionError(f"cannot list {folder}: {error.strerror or error}") from None
    with entries:
        for count, entry in enumerate(entries):
            if count >= MAX_RECORDS:
                raise LimitError(f"{folder} holds more than {MAX_RECORDS} entries")
            match = RECORD_NAME.match(entry.name)
            if match and entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                path = Path(entry.path)
                found.append(RecordFile(int(match[1]), path, info.st_size, info.st_mtime_ns))
    found.sort(key=lambda r: r.step)
    return RunState(directory, manifest, tuple(found))


def read_record(record: RecordFile, spectra: bool = True) -> ModelAnalysis | None:
    """The analysis a record holds (its card's spec the record's path, its fingerprint the
    SHA-256 of the file), or None if the file is not a whole record (damaged, or replaced since
    it was listed); without ``spectra`` only its table and card are read."""
    key = (str(record.path), record.size, record.mtime_ns, spectra)
    found = _READ.get(key)
    if found is not None:
        return found
    if record.size > MAX_RECORD_BYTES:
        raise LimitError(
            f"{record.path}: a record of {record.size:,} bytes, more than {MAX_RECORD_BYTES:,}"
        )
    try:
        with open_regular(record.path) as handle:
            data = handle.read(MAX_RECORD_BYTES + 1)
    except (OSError, HeadformsError):  # gone since listed, or not a regular file
        return None
    if not _stored_whole(data):
        return None
    stored = decode(data, RECORD_KIND, arrays=spectra)
    if stored is None or "heads" not in stored.tables or "card" not in stored.meta:
        return None
    try:
        analysis = analysis_from_record(stored)
    except (KeyError, TypeError, ValueError):
        return None
    digest = hashlib.sha256(data).hexdigest()
    analysis.card = replace(analysis.card, spec=str(record.path), fingerprint=digest)
    return _READ.put(key, analysis)


def _stored_whole(data: bytes) -> bool:
    """Whether ``data`` is a zip archive whose members are stored uncompressed (as
    :func:`headforms.store.records.encode` writes them): reading it then takes no more memory
    than its size (a compressed member could expand a small file without bound)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False
    return all(m.compress_type == zipfile.ZIP_STORED for m in members)


def read_records(
    state: RunState, spectra: bool = True
) -> tuple[list[tuple[RecordFile, ModelAnalysis]], list[RecordFile]]:
    """Every whole record of ``state`` in step order, and those that could not be read."""
    whole, damaged = [], []
    for record in state.records:
        analysis = read_record(record, spectra)
        if analysis is None:
            damaged.append(record)
        else:
            whole.append((record, analysis))
    return whole, damaged


def thinned(records: Sequence[RecordFile], most: int) -> tuple[RecordFile, ...]:
    """At most ``most`` (2 or more) of ``records``, evenly spread over their order, the first and
    the last always among them (all of them when there are no more)."""
    if len(records) <= most:
        return tuple(records)
    picks = np.unique(np.linspace(0, len(records) - 1, max(2, most)).round().astype(int))
    return tuple(records[i] for i in picks)


def record_path(directory: str | Path, step: int) -> Path:
    """Where the record of ``step`` is written."""
    return Path(directory) / RECORDS / f"step-{int(step)}.zip"


class RunWriter:
    """Writes one run store (module doc): the manifest when opened, a record per :meth:`write`,
    the manifest again when :meth:`finish` says the run ended."""

    def __init__(self, directory: str | Path, manifest: RunManifest):
        self.directory = Path(directory)
        self.manifest = manifest

    @classmethod
    def open(
        cls,
        directory: str | Path,
        model: str,
        shapes: dict[str, int],
        options: AnalysisOptions,
        every: int | None = None,
    ) -> RunWriter:
        """The store in ``directory`` for a model of ``shapes`` at ``options``: a new one, or
        the one there (a run resumed, or a loop recording again) if it has the same shapes and
        options, which it refuses in one line otherwise."""
        directory = Path(directory)
        shapes = {k: int(shapes[k]) for k in SHAPE_FIELDS}
        fresh = RunManifest(
            model, shapes, options.rope_position, options.fold_qk_norm, every, time.time()
        )
        if is_run_store(directory):
            kept = read_manifest(directory)
            differ = [
                name
                for name, ours, theirs in (
                    ("shapes", shapes, kept.shapes),
                    ("RoPE position", options.rope_position, kept.rope_position),
                    ("QK-norm folding", options.fold_qk_norm, kept.fold_qk_norm),
                )
                if ours != theirs
            ]
            if differ:
                raise OptionError(
                    f"{directory} holds the run store of another run ({', '.join(differ)} "
                    f"differ: {kept.model}); record into another directory"
                )
            fresh = replace(kept, every=every, finished=None, finished_at=None)
        writer = cls(directory, fresh)
        write_atomic(directory / MANIFEST, fresh.as_json())
        return writer

    def write(self, step: int, analysis: ModelAnalysis, meta: dict[str, Any] | None = None) -> Path:
        """Write the record of ``step`` (whole or not at all) and return its path."""
        record = analysis_record(analysis)
        record.meta.update({"step": int(step), "time": time.time(), **(meta or {})})
        return write_atomic(record_path(self.directory, step), encode(record))

    def finish(self, step: int) -> None:
        """Say in the manifest that the run ended at ``step`` (readers stop waiting for more)."""
        self.manifest = replace(self.manifest, finished=int(step), finished_at=time.time())
        write_atomic(self.directory / MANIFEST, self.manifest.as_json())
