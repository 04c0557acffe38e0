"""The author's published files (``head_statistics.csv`` and ``<tag>_spectra.npz``), written
for the tests from models they analyse, computed as the author defines them and independently
of headforms: each head's form restricted to the span of ``[K^T, Q^T]`` (an orthonormal basis
R from a QR: the reduced form ``R^T K^T Q R``, 2n x 2n), then dense ``eigvalsh`` and ``svd`` of
its parts, every statistic straight from its definition. The query and key projections are
read from the torch model's own parameters (GPT-2's fused Conv1D, or separate q/k projections
with grouped-query key heads).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import torch

AUTHOR_CUT = 1e-9
"""The author's zero cut: eigenvalues of S within this times the largest modulus are zeros."""

COLUMNS = (
    "model,layer,head,kv_head,dim,symmetric_energy,balance,pairing,rho,pairing_bound,"
    "pairing_gap,lobe_departure,n_pos,n_neg,n_zero,a,b,c,d,b_sym,c_sym,d_sym,trace_ratio,"
    "participation_ratio,stable_rank,leading_share"
).split(",")
"""The columns of the author's head_statistics.csv, in its order."""


Projection = tuple[int, int, int, np.ndarray, np.ndarray]


def head_projections(model: torch.nn.Module) -> Iterator[Projection]:
    """``(layer, head, kv_head, Q_h, K_h)`` of every query head (``n x N`` float64), read from
    the model's parameters: GPT-2's ``c_attn`` (in x out, q | k | v) or ``q_proj``/``k_proj``
    (out x in; query head h uses key head h // (H / H_kv))."""
    config = model.config
    base = getattr(model, "transformer", None) or getattr(model, "model", model)
    if hasattr(base, "h"):  # GPT-2
        n_heads, width = config.n_head, config.n_embd
        n = width // n_heads
        for layer, block in enumerate(base.h):
            weight = block.attn.c_attn.weight.detach().double().numpy()  # (N, 3N)
            for head in range(n_heads):
                q = weight[:, head * n : (head + 1) * n].T
                k = weight[:, width + head * n : width + (head + 1) * n].T
                yield layer, head, head, q, k
        return
    n_heads, n_kv = config.num_attention_heads, config.num_key_value_heads
    n = getattr(config, "head_dim", None) or config.hidden_size // n_heads
    for layer, block in enumerate(base.layers):
        q_all = block.self_attn.q_proj.weight.detach().double().numpy()
        k_all = block.self_attn.k_proj.weight.detach().double().numpy()
        for head in range(n_heads):
            kv = head // (n_heads // n_kv)
            yield layer, head, kv, q_all[head * n : (head + 1) * n], k_all[kv * n : (kv + 1) * n]


def reduced_form(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``R^T K^T Q R`` with R an orthonormal basis of the span of ``[K^T, Q^T]`` (``2n x 2n``)."""
    basis, _ = np.linalg.qr(np.concatenate([k.T, q.T], axis=1))
    return (k @ basis).T @ (q @ basis)


def author_row(
    tag: str, layer: int, head: int, kv_head: int, form: np.ndarray
) -> tuple[dict, dict[str, np.ndarray]]:
    """One head's row of head_statistics.csv and its spectra, from its reduced form."""
    sym, skew = (form + form.T) / 2, (form - form.T) / 2
    norm2, sym2 = float(np.sum(form**2)), float(np.sum(sym**2))
    ev = np.linalg.eigvalsh(sym)
    cut = AUTHOR_CUT * np.abs(ev).max()
    n_pos, n_neg = int(np.sum(ev > cut)), int(np.sum(ev < -cut))
    pos, neg = np.sort(ev[ev > 0])[::-1], np.sort(-ev[ev < 0])[::-1]
    size = max(pos.size, neg.size)
    pos, neg = np.pad(pos, (0, size - pos.size)), np.pad(neg, (0, size - neg.size))
    diff = pos - neg
    rho = np.linalg.norm(neg) / np.linalg.norm(pos) if np.linalg.norm(pos) > 0 else np.nan
    pairing = 1 - np.linalg.norm(diff) / np.sqrt(sym2)
    bound = 1 - abs(1 - rho) / np.sqrt(1 + rho**2)
    energy = np.linalg.svd(form, compute_uv=False) ** 2
    row = {
        "model": tag,
        "layer": layer,
        "head": head,
        "kv_head": kv_head,
        "dim": form.shape[0],
        "symmetric_energy": sym2 / norm2,
        "balance": 1 - abs(n_pos - n_neg) / (n_pos + n_neg),
        "pairing": pairing,
        "rho": rho,
        "pairing_bound": bound,
        "pairing_gap": bound - pairing,
        "lobe_departure": np.linalg.norm(neg - rho * pos) / np.linalg.norm(neg),
        "n_pos": n_pos,
        "n_neg": n_neg,
        "n_zero": ev.size - n_pos - n_neg,
        "a": float(np.sum(skew**2)) / norm2,
        "b": 2 * pos @ neg / norm2,
        "c": np.sum(diff[diff > 0] ** 2) / norm2,
        "d": np.sum(diff[diff < 0] ** 2) / norm2,
        "b_sym": 2 * pos @ neg / sym2,
        "c_sym": np.sum(diff[diff > 0] ** 2) / sym2,
        "d_sym": np.sum(diff[diff < 0] ** 2) / sym2,
        "trace_ratio": abs(np.trace(form)) / np.sqrt(norm2),
        "participation_ratio": energy.sum() ** 2 / np.sum(energy**2),
        "stable_rank": energy.sum() / energy[0],
        "leading_share": energy[0] / energy.sum(),
    }
    spectra = {
        "eigenvalues": ev,
        "sigma_T": np.linalg.svd(skew, compute_uv=False),
        "sigma_L": np.sqrt(energy),
    }
    return row, spectra


def write_author_files(directory: Path, models: Mapping[str, torch.nn.Module]) -> Path:
    """``head_statistics.csv`` (every model's rows) and one ``<tag>_spectra.npz`` per model in
    ``directory``, as the author writes them; returns the CSV's path."""
    directory.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for tag, model in models.items():
        spectra: dict[str, list] = {"eigenvalues": [], "sigma_T": [], "sigma_L": []}
        layers, heads = [], []
        for layer, head, kv, q, k in head_projections(model):
            row, spectrum = author_row(tag, layer, head, kv, reduced_form(q, k))
            rows.append(row)
            layers.append(layer)
            heads.append(head)
            for name, values in spectrum.items():
                spectra[name].append(values)
        np.savez_compressed(
            directory / f"{tag}_spectra.npz",
            **{name: np.array(values) for name, values in spectra.items()},
            layer=np.array(layers),
            head=np.array(heads),
        )
    path = directory / "head_statistics.csv"
    pd.DataFrame(rows, columns=COLUMNS).to_csv(path, index=False)
    return path
