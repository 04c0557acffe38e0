"""gguf's reader over an ndarray view (headforms/behaviour/gguf_parse.py): the same fields and
tensors as the plain reader, on a small GGUF file written here."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf.gguf_reader import GGUFReader as PLAIN  # not the session's parsed-once reader

from headforms.behaviour.gguf_parse import cheap_gguf_parses, viewing_reader


@pytest.fixture(scope="module")
def gguf_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Scalars, strings, arrays of strings and numbers (a tokenizer's shapes), F32, F16 and
    Q8_0 tensors."""
    path = tmp_path_factory.mktemp("gguf-parse") / "small.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("small")
    writer.add_block_count(2)
    writer.add_rope_freq_base(10000.0)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"tok{i}" for i in range(300)] + ["", "é", "\u4e2d"])
    writer.add_token_scores([float(i) / 7 for i in range(303)])
    writer.add_token_types([1 + i % 3 for i in range(303)])
    writer.add_token_merges(["t o", "to k"])
    rng = np.random.default_rng(0)
    writer.add_tensor("a.weight", rng.standard_normal((3, 64)).astype(np.float32))
    writer.add_tensor("b.weight", rng.standard_normal((2, 32)).astype(np.float16))
    q8 = gguf.quants.quantize(
        rng.standard_normal((4, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0
    )
    writer.add_tensor("c.weight", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _fields(reader: gguf.GGUFReader) -> list[tuple]:
    return [
        (f.name, f.types, f.data, [bytes(np.ascontiguousarray(p).view(np.uint8)) for p in f.parts])
        for f in reader.fields.values()
    ]


def _tensors(reader: gguf.GGUFReader) -> list[tuple]:
    return [
        (t.name, t.tensor_type, t.shape.tolist(), t.n_elements, t.data_offset, t.data.tobytes())
        for t in reader.tensors
    ]


def test_the_view_parses_the_same_fields_and_tensors(gguf_file: Path) -> None:
    plain = PLAIN(gguf_file)
    viewing = viewing_reader(PLAIN)(gguf_file)
    assert _fields(viewing) == _fields(plain)
    assert len(_fields(plain)) >= 10
    assert _tensors(viewing) == _tensors(plain)
    # The mechanism is in effect (it is gone if gguf renames its field parser): no memmap slices.
    assert type(plain.fields["tokenizer.ggml.tokens"].parts[-1]) is np.memmap
    metadata = [f for f in viewing.fields.values() if not f.name.startswith("GGUF.")]  # header
    assert all(type(p) is np.ndarray for f in metadata for p in f.parts), (
        "gguf's field parser was not given the ndarray view"
    )
    # Tensors stay views of the mapped file, not copies.
    assert not viewing.tensors[0].data.flags.owndata


def test_the_swap_holds_only_within_the_block(gguf_file: Path) -> None:
    original = gguf.GGUFReader
    with cheap_gguf_parses():
        swapped = gguf.GGUFReader
        assert swapped is not original and issubclass(swapped, original)
        reader = gguf.GGUFReader(gguf_file)  # as transformers looks it up, at each call
        assert _fields(reader) == _fields(PLAIN(gguf_file))
    assert gguf.GGUFReader is original
    with pytest.raises(RuntimeError), cheap_gguf_parses():
        raise RuntimeError("a failed conversion")
    assert gguf.GGUFReader is original
