"""The three bundled models run as transformers runs them: the same tokens (the cached
tokenizer against transformers' own) and the same attention to float32 precision (SmolLM2 and
Gemma-3 against ``from_pretrained(gguf_file=...)``, MiniLM against ``from_pretrained(dir)``).

Slow: transformers' own GGUF loading takes 15-60 s per model here.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

from headforms.behaviour import DEFAULT_PROMPT, attention
from headforms.behaviour.gguf import transformers_config
from headforms.behaviour.runnable import LOADED, runnable
from headforms.readers import GGUFReader
from headforms.sources import locate

pytestmark = pytest.mark.slow

FLOAT32 = 2e-6
TEXTS = (
    DEFAULT_PROMPT,
    "Hello world",
    "  leading spaces, a\nnew line and a\ttab",
    "ünïcödé, emoji 🙂, 中文, and math: ∑ x² ≤ 1",
    "special-looking text: <bos> <|im_start|> [CLS] </s>",
    "a" * 300,
)


def reference(spec: str) -> tuple[object, object]:
    """transformers' own tokenizer and base model (eager) of a bundled model."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    located = locate(spec)
    if located.format == "gguf":
        path = located.weights[0].path
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, attn_implementation="eager"
        ).base_model
    else:
        directory = located.config_file.path.parent
        tokenizer = AutoTokenizer.from_pretrained(str(directory))
        model = AutoModel.from_pretrained(str(directory), attn_implementation="eager")
    return tokenizer, model.eval()


@pytest.mark.parametrize("spec", ["smollm2-135m", "minilm-l6", "gemma3-270m"])
def test_bundled_model_runs_as_transformers_runs_it(spec: str) -> None:
    tokenizer, model = reference(spec)
    try:
        ours = runnable(locate(spec))
        for text in TEXTS:  # the cached tokenizer encodes exactly as transformers' does
            assert ours.tokenizer.encode(text) == tokenizer(text)["input_ids"], text
        assert ours.tokenizer.texts(tokenizer("Hello world")["input_ids"]) == [
            tokenizer.decode([i]) for i in tokenizer("Hello world")["input_ids"]
        ]
        located = locate(spec)
        if located.format == "gguf":  # the config is transformers', field for field
            got = transformers_config(GGUFReader(located.weights[0].path)).to_dict()
            want = model.config.to_dict()
            for config in (got, want):
                for key in ("_name_or_path", "architectures", "dtype", "quantization_config"):
                    config.pop(key, None)
            assert got == want
        for text in (DEFAULT_PROMPT, TEXTS[3]):
            pattern = attention(spec, text, use_cache=False)
            ids = tokenizer(text, return_tensors="pt")
            assert pattern.token_ids == ids["input_ids"][0].tolist()
            with torch.no_grad():
                out = model(**ids, output_attentions=True)
            want = np.stack([a[0].numpy() for a in out.attentions])
            np.testing.assert_allclose(pattern.weights, want, atol=FLOAT32, rtol=0)
            assert pattern.causal is (spec != "minilm-l6")
    finally:
        del tokenizer, model
        LOADED.clear()
        gc.collect()
