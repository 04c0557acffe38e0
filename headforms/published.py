"""The author's published spectra (``<model>_spectra.npz`` beside ``head_statistics.csv``, in
``scripts/survey_results/`` of the author's repository), read into this package's spectra and
checked against the table's own columns.

The file (``np.savez_compressed``) holds, rows in the table's head order: ``eigenvalues`` (heads
x 2n: the eigenvalues of the reduced symmetric part, ascending as ``eigvalsh`` returns them),
``sigma_T`` (heads x 2n: the singular values of the reduced antisymmetric part), ``sigma_L``
(heads x 2n: those of the reduced L), ``layer`` and ``head``. The reduced form ``R^T L R`` (R an
orthonormal basis of the span of ``[K^T, Q^T]``) has the non-zero spectra of L, S and A, so:

- ``eig_s``: the eigenvalues, decreasing; those within :data:`AUTHOR_ZERO_CUT` of a row's largest
  modulus are zeros (as the author counts ``n_pos``, ``n_neg``); ``lobe_pos``, ``lobe_neg`` from
  them; ``sv_a``: ``sigma_T``, decreasing (each value twice, like this package's);
- the singular values of L: the first n of ``sigma_L``, decreasing (the author's statistics);
- the moduli of the eigenvalues of L (``eig_l_abs``) are not determined by these spectra: absent.

Every per-head metric is computed again from these spectra (:func:`headforms.forms.form_metrics`)
and compared with the table's columns (:func:`check_table`): a mismatch is one line naming the
model and the head. The file is bounded before it is decompressed: the uncompressed sizes its
archive declares (which bound what is read) within the table limit.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .columns import PROFILE_COLUMNS
from .errors import CorruptFileError
from .forms import FormBatch, form_metrics, lobes
from .settings import MAX_TABLE_BYTES_ENV, human_bytes
from .sources.files import short_name

AUTHOR_ZERO_CUT = 1e-9
"""An eigenvalue of S within this times the row's largest modulus is a zero (the author's
``TOL``: ``n_pos``, ``n_neg`` count beyond it)."""

ARRAYS = ("eigenvalues", "sigma_T", "sigma_L", "layer", "head")
"""The arrays of a spectra file."""

SHARES = (
    *PROFILE_COLUMNS,
    "balance",
    "leading_share",
    "pairing_bound",
    "pairing_gap",
)
RATIOS = ("trace_ratio", "participation_ratio", "stable_rank", "rho", "lobe_departure")
COUNTS = ("n_pos", "n_neg")
CHECKED = SHARES + RATIOS + COUNTS
"""The table's columns compared with the spectra's values: shares in [0, 1] within
:data:`SHARE_TOLERANCE`, ratios within :data:`RELATIVE_TOLERANCE` of the table's value, counts
exactly."""

SHARE_TOLERANCE = 1e-6
RELATIVE_TOLERANCE = 1e-6
"""The table and its spectra are both float64 from one computation: they agree to ~1e-12; these
tolerances leave room for a table written with fewer digits, not for another quantity."""


@dataclass(frozen=True)
class PublishedSpectra:
    """One model's published spectra, rows layer-major like its table: ``spectra`` (``eig_s``,
    ``lobe_pos``, ``lobe_neg``, ``sv_a``) and ``metrics``, every per-head metric of those
    spectra (:func:`headforms.forms.form_metrics`; ``n_zero`` out of ``model_dim``)."""

    spectra: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]


def read_spectra_file(path: Path, max_bytes: int) -> dict[str, np.ndarray]:
    """The arrays of a spectra file, once the sizes its archive declares are within
    ``max_bytes`` (nothing is decompressed before); one line for a file that is not one."""
    name = short_name(path.name)
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info for info in archive.infolist()}
            missing = [a for a in ARRAYS if f"{a}.npy" not in members]
            if missing:
                raise CorruptFileError(
                    f"{name}: not a spectra file of the author's format: no "
                    f"{', '.join(missing)}; it holds {', '.join(ARRAYS)}"
                )
            declared = sum(members[f"{a}.npy"].file_size for a in ARRAYS)
            if declared > max_bytes:
                raise CorruptFileError(
                    f"{name} expands to {human_bytes(declared)}, more than the "
                    f"{human_bytes(max_bytes)} a table may have ({MAX_TABLE_BYTES_ENV}); "
                    "nothing was read"
                )
            arrays = {
                array: _read_member(archive, members[f"{array}.npy"], name) for array in ARRAYS
            }
    except CorruptFileError:
        raise
    except Exception as exc:  # zipfile and numpy raise many types for a malformed file
        raise CorruptFileError(
            f"{name}: cannot read it as a spectra file ({type(exc).__name__})"
        ) from exc
    return arrays


def _read_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, name: str) -> np.ndarray:
    """One ``.npy`` member of a spectra file, its header checked before its data is read: a
    plain dtype (no objects, no pickles) and no more data than the member's declared size (an
    array is never allocated from a header's word alone)."""
    readers = {
        (1, 0): np.lib.format.read_array_header_1_0,
        (2, 0): np.lib.format.read_array_header_2_0,
    }
    with archive.open(member) as handle:
        version = np.lib.format.read_magic(handle)
        if version not in readers:
            raise CorruptFileError(f"{name}: {member.filename} is a .npy of version {version}")
        shape, fortran, dtype = readers[version](handle)
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if dtype.hasobject or size > member.file_size:
            raise CorruptFileError(
                f"{name}: {member.filename} declares {shape} values of {dtype}, more than it holds"
                if not dtype.hasobject
                else f"{name}: {member.filename} holds Python objects, not numbers"
            )
        data = handle.read(size)
    if len(data) != size:
        raise CorruptFileError(f"{name}: {member.filename} ends before its data")
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")


def published_spectra(
    arrays: dict[str, np.ndarray],
    layer: np.ndarray,
    head: np.ndarray,
    reduced_dim: int,
    model_dim: int,
    where: str,
) -> PublishedSpectra:
    """The spectra and metrics of a model's heads (``layer``, ``head``: its table's rows,
    layer-major) from its spectra file's arrays; ``reduced_dim``: the table's ``dim`` (2n);
    ``model_dim``: N (0 when unknown: ``n_zero`` is then counted out of 2n); ``where``: the file
    and model, for errors."""
    count = len(layer)
    for array in ("eigenvalues", "sigma_T", "sigma_L"):
        values = arrays[array]
        if values.ndim != 2 or values.shape != (count, reduced_dim):
            raise CorruptFileError(
                f"{where}: {array} has shape {values.shape}, not (heads, 2n) = "
                f"({count}, {reduced_dim}) as its table gives"
            )
        if values.dtype.kind not in "fiu" or not np.all(np.isfinite(values)):
            raise CorruptFileError(
                f"{where}: {array} holds a value that is not a finite number{_first_bad(values)}"
            )
    order = _head_order(arrays, layer, head, where)
    ascending = np.asarray(arrays["eigenvalues"], dtype=np.float64)[order]
    eig_s = ascending[:, ::-1].copy()
    cut = AUTHOR_ZERO_CUT * np.abs(eig_s).max(axis=-1, keepdims=True)
    eig_s[np.abs(eig_s) <= cut] = 0.0
    lobe_pos, lobe_neg = lobes(eig_s)
    sigma_t = -np.sort(-np.asarray(arrays["sigma_T"], dtype=np.float64)[order], axis=-1)
    sigma_l = -np.sort(-np.asarray(arrays["sigma_L"], dtype=np.float64)[order], axis=-1)
    batch = FormBatch(
        model_dim=model_dim or reduced_dim,
        norm_l2=np.sum(sigma_l**2, axis=-1),
        norm_s2=np.sum(ascending**2, axis=-1),
        norm_a2=np.sum(sigma_t**2, axis=-1),
        eig_s=eig_s,
        lobe_pos=lobe_pos,
        lobe_neg=lobe_neg,
        sv_a=sigma_t,
        eig_l_abs=np.empty((count, 0)),
        sv_l=sigma_l[:, : reduced_dim // 2],
        trace_l=np.sum(ascending, axis=-1),
    )
    spectra = {"eig_s": eig_s, "lobe_pos": lobe_pos, "lobe_neg": lobe_neg, "sv_a": sigma_t}
    return PublishedSpectra(spectra, form_metrics(batch))


def _first_bad(values: np.ndarray) -> str:
    if values.dtype.kind not in "fiu":
        return f" (its type is {values.dtype})"
    row = int(np.flatnonzero(~np.isfinite(values).all(axis=-1))[0])
    return f" (row {row})"


def _head_order(
    arrays: dict[str, np.ndarray], layer: np.ndarray, head: np.ndarray, where: str
) -> np.ndarray:
    """The permutation putting the file's rows in the table's (layer-major) order, once its
    ``layer`` and ``head`` arrays name exactly the table's heads."""
    file_layer, file_head = arrays["layer"], arrays["head"]
    if file_layer.shape != layer.shape or file_head.shape != head.shape:
        raise CorruptFileError(
            f"{where}: layer and head list {file_layer.size} heads, the table {layer.size}"
        )
    if file_layer.dtype.kind not in "iu" or file_head.dtype.kind not in "iu":
        raise CorruptFileError(f"{where}: layer and head must hold integers")
    order = np.lexsort((file_head, file_layer))
    same = (file_layer[order] == layer) & (file_head[order] == head)
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        raise CorruptFileError(
            f"{where}: its heads are not the table's: the table has L{layer[i]}H{head[i]} "
            f"where the file has L{file_layer[order][i]}H{file_head[order][i]}"
        )
    return order


def check_table(rows: pd.DataFrame, metrics: dict[str, np.ndarray], where: str) -> None:
    """Compare the table's columns (``rows``, layer-major, the columns of :data:`CHECKED` it
    has) with the values its spectra give (``metrics``); the first mismatch is one line naming
    the head, the column and both values."""
    layer, head = rows["layer"].to_numpy(), rows["head"].to_numpy()
    for column in CHECKED:
        if column not in rows.columns:
            continue
        given = rows[column].to_numpy(dtype=np.float64)
        derived = np.asarray(metrics[column], dtype=np.float64)
        if column in COUNTS:
            close = given == derived
        elif column in SHARES:
            close = np.abs(given - derived) <= SHARE_TOLERANCE
        else:
            close = np.abs(given - derived) <= RELATIVE_TOLERANCE * np.abs(given)
        close |= np.isnan(given) & np.isnan(derived)
        if not close.all():
            i = int(np.flatnonzero(~close)[0])
            raise CorruptFileError(
                f"{where}, head L{layer[i]}H{head[i]}: its spectra give {column} = "
                f"{derived[i]:.10g}, the table {given[i]:.10g}"
            )
