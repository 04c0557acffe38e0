"""Tolerances for numbers that cross a process, a container or a file.

The same float64 computation run in two environments (the host sets ``OPENBLAS_CORETYPE``, a
container does not, so OpenBLAS picks other kernels) differs in the last digits: shares in
[0, 1] agree to about 1e-15 absolutely, but a share that is zero up to rounding (5e-12, say)
can differ in its 11th significant digit. Shares are therefore compared absolutely, never
relatively; a real error moves a share by far more than :data:`SHARE_ATOL`.
"""

from __future__ import annotations

import numpy as np

SHARE_ATOL = 1e-10
"""Absolute tolerance for shares in [0, 1] (profile coordinates, energy, pairing) computed in
two environments; measured differences between the host and a container are about 1e-15."""


def assert_shares_close(actual, expected, err_msg: str = "") -> None:
    """Shares in [0, 1] from two environments agree to :data:`SHARE_ATOL`, absolutely."""
    np.testing.assert_allclose(
        np.asarray(actual, dtype=float),
        np.asarray(expected, dtype=float),
        rtol=0,
        atol=SHARE_ATOL,
        err_msg=err_msg,
    )
