"""The fast GGUF reader against gguf's own ``GGUFReader`` + ``gguf.quants.dequantize``.

SmolLM2: the tensor table, every layer's Q/K (and one tensor per storage type), every metadata
scalar. Gemma-3: the Q/K tensors and QK-norm gains of a few layers (gguf's parse takes ~12 s,
mostly tokenizer arrays; it is shared with test_real_models). Damaged files (truncated at any
point of the header, flipped header bytes) raise :class:`CorruptFileError` and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gguf_reference import dequantized, reference_reader, reference_tensors

from headforms.errors import CorruptFileError
from headforms.readers import GGUFReader
from headforms.sources import BUNDLED_MODELS

GEMMA_LAYERS = (0, 5)  # a local and the first global (RoPE theta 1e6) layer


@pytest.fixture(scope="module")
def smollm2_path() -> Path:
    return BUNDLED_MODELS["smollm2-135m"].locate()


@pytest.fixture(scope="module")
def smollm2_reference(smollm2_path: Path) -> dict[str, object]:
    return {
        "tensors": reference_tensors(smollm2_path),
        "order": [t.name for t in reference_reader(smollm2_path).tensors],
        "fields": reference_reader(smollm2_path).fields,
    }


def test_smollm2_tensor_table_matches(smollm2_path: Path, smollm2_reference) -> None:
    fast = GGUFReader(smollm2_path)
    assert fast.names() == smollm2_reference["order"]
    for name, tensor in smollm2_reference["tensors"].items():
        assert fast.shape(name) == tuple(reversed(tensor.shape.tolist())), name
        assert fast.storage_dtype(name) == tensor.tensor_type.name, name
    assert fast.storage_dtype("blk.0.attn_q.weight") == "Q4_1"


def test_smollm2_attention_tensors_are_bit_identical(smollm2_path: Path, smollm2_reference) -> None:
    """Every layer's Q and K, and the smallest tensor of each other storage type in the file:
    values equal; past a million values (SmolLM2's only Q8_0 tensor, the 28M-value embedding) the
    stored bytes equal (what the reader dequantizes, in the shape checked above)."""
    fast = GGUFReader(smollm2_path)
    tensors = smollm2_reference["tensors"]
    chosen = {n: t for n, t in tensors.items() if n.endswith(("attn_q.weight", "attn_k.weight"))}
    assert len(chosen) == 60
    for name, tensor in sorted(tensors.items(), key=lambda item: int(item[1].n_elements)):
        if tensor.tensor_type not in {t.tensor_type for t in chosen.values()}:
            chosen[name] = tensor
    assert len({t.tensor_type for t in chosen.values()}) >= 3
    for name, tensor in chosen.items():
        if int(tensor.n_elements) > 2**20:
            stored = np.asarray(tensor.data).view(np.uint8).ravel()
            np.testing.assert_array_equal(fast.raw(name).ravel(), stored, err_msg=name)
            continue
        ours = fast.read(name)
        assert ours.dtype == np.float64
        np.testing.assert_array_equal(ours, dequantized(tensor), err_msg=name)


def test_smollm2_metadata_scalars_match(smollm2_path: Path, smollm2_reference) -> None:
    """Every scalar and string field is read; arrays (tokenizer) are skipped, not misparsed."""
    fast = GGUFReader(smollm2_path)
    fields = {k: f for k, f in smollm2_reference["fields"].items() if not k.startswith("GGUF.")}
    assert set(fast.metadata) == set(fields)
    n_arrays = 0
    for key, field in fields.items():
        if len(field.types) > 1 or field.types[0].name == "ARRAY":
            assert fast.metadata[key] is None, key
            n_arrays += 1
        else:
            assert fast.metadata[key] == field.contents(), key
    assert n_arrays > 0  # the tokenizer arrays were skipped over correctly


@pytest.mark.slow
def test_gemma_attention_tensors_are_bit_identical() -> None:
    path = BUNDLED_MODELS["gemma3-270m"].locate()
    reference = reference_tensors(path)
    fast = GGUFReader(path)
    for layer in GEMMA_LAYERS:
        for part in ("attn_q", "attn_k", "attn_q_norm", "attn_k_norm"):
            name = f"blk.{layer}.{part}.weight"
            assert fast.storage_dtype(name) == reference[name].tensor_type.name
            np.testing.assert_array_equal(fast.read(name), dequantized(reference[name]), name)


# ---------------------------------------------------------------------------------------------
# Damaged files


@pytest.fixture(scope="module")
def smollm2_head(smollm2_path: Path) -> tuple[bytes, int]:
    """The first bytes of SmolLM2 up to a little past the start of tensor data, and that start."""
    data_start = reference_reader(smollm2_path).data_offset
    with smollm2_path.open("rb") as fh:
        return fh.read(data_start + 4096), data_start


def test_truncation_anywhere_in_the_header_is_a_corrupt_file(
    smollm2_head: tuple[bytes, int], tmp_path: Path
) -> None:
    head, data_start = smollm2_head
    rng = np.random.default_rng(7)
    cuts = sorted({0, 3, 4, 8, 23, 24, 25, 40, *rng.integers(25, data_start + 4096, 40).tolist()})
    path = tmp_path / "cut.gguf"
    for cut in cuts:
        path.write_bytes(head[:cut])
        with pytest.raises(CorruptFileError, match="cut.gguf"):
            GGUFReader(path)


def test_flipped_header_bytes_never_escape_as_other_errors(
    smollm2_head: tuple[bytes, int], tmp_path: Path
) -> None:
    """A damaged header either still parses or raises CorruptFileError (no struct/index error)."""
    head, data_start = smollm2_head
    rng = np.random.default_rng(11)
    path = tmp_path / "flip.gguf"
    raised = 0
    for _ in range(60):
        data = bytearray(head)
        for pos in rng.integers(4, data_start, 3):
            data[pos] ^= int(rng.integers(1, 256))
        path.write_bytes(bytes(data))
        try:
            GGUFReader(path)
        except CorruptFileError:
            raised += 1
    assert raised > 0


def test_wrong_magic_and_version_are_named(smollm2_head: tuple[bytes, int], tmp_path: Path) -> None:
    head, _ = smollm2_head
    path = tmp_path / "bad.gguf"
    path.write_bytes(b"GGUX" + head[4:])
    with pytest.raises(CorruptFileError, match="not a GGUF file"):
        GGUFReader(path)
    path.write_bytes(head[:4] + (99).to_bytes(4, "little") + head[8:])
    with pytest.raises(CorruptFileError, match="unsupported GGUF version 99"):
        GGUFReader(path)
