"""Tiny random transformers models for exactness tests (built in the test session, never stored).

Each builder makes a transformers config, instantiates the model with random weights large
enough that attention is far from uniform (so extraction errors show), saves it with
``save_pretrained`` (safetensors) and returns the model in float64 eval mode. The helpers run
a model and return, per layer, the attention module's input hidden states and the model's own
attention probabilities, the ground truth the engine's extracted forms are compared with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

N, H, LAYERS, VOCAB, FFN, MAX_POS = 64, 4, 2, 128, 128, 512
"""Model dim, query heads, layers, vocabulary, MLP width and positions of every tiny model."""

WEIGHT_STD = 0.15
"""Std of random matrices/biases: scores of order 1-10, so attention is far from uniform."""


def _gpt2() -> Any:
    from transformers import GPT2Config

    return GPT2Config(
        n_embd=N,
        n_head=H,
        n_layer=LAYERS,
        vocab_size=VOCAB,
        n_positions=MAX_POS,
        scale_attn_by_inverse_layer_idx=True,
    )


def _opt() -> Any:
    from transformers import OPTConfig

    return OPTConfig(
        hidden_size=N,
        num_attention_heads=H,
        num_hidden_layers=LAYERS,
        ffn_dim=FFN,
        vocab_size=VOCAB,
        max_position_embeddings=MAX_POS,
        word_embed_proj_dim=N,
    )


def _bloom() -> Any:
    from transformers import BloomConfig

    return BloomConfig(hidden_size=N, n_head=H, n_layer=LAYERS, vocab_size=VOCAB)


def _gpt_neox() -> Any:
    from transformers import GPTNeoXConfig

    return GPTNeoXConfig(
        hidden_size=N,
        num_attention_heads=H,
        num_hidden_layers=LAYERS,
        intermediate_size=FFN,
        vocab_size=VOCAB,
        max_position_embeddings=MAX_POS,
        rope_parameters={"rope_type": "default", "rope_theta": 500.0, "partial_rotary_factor": 0.5},
    )


def _llama_like(config_cls: Callable[..., Any], **extra: Any) -> Any:
    kwargs: dict[str, Any] = dict(
        hidden_size=N,
        num_attention_heads=H,
        num_key_value_heads=2,
        num_hidden_layers=LAYERS,
        intermediate_size=FFN,
        vocab_size=VOCAB,
        max_position_embeddings=MAX_POS,
    )
    kwargs.update(extra)
    return config_cls(**kwargs)


def _llama() -> Any:
    from transformers import LlamaConfig

    # non-default RoPE: linear position interpolation (also expressible in GGUF metadata);
    # q/k biases, which llama.cpp permutes like the weights
    rope = {"rope_type": "linear", "rope_theta": 1000.0, "factor": 2.0}
    return _llama_like(LlamaConfig, rope_parameters=rope, attention_bias=True)


def _mistral() -> Any:
    from transformers import MistralConfig

    return _llama_like(MistralConfig, sliding_window=None)


def _qwen2() -> Any:
    from transformers import Qwen2Config

    rope = {
        "rope_type": "llama3",
        "rope_theta": 300.0,
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
    }
    return _llama_like(Qwen2Config, rope_parameters=rope)


def _qwen3() -> Any:
    from transformers import Qwen3Config

    return _llama_like(Qwen3Config, head_dim=16, attention_bias=True)


def _gemma3() -> Any:
    from transformers import Gemma3TextConfig

    return _llama_like(
        Gemma3TextConfig,
        num_key_value_heads=1,
        head_dim=24,
        query_pre_attn_scalar=24,
        sliding_window=MAX_POS,
        layer_types=["sliding_attention", "full_attention"],
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
            "full_attention": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
        },
    )


def _bert() -> Any:
    from transformers import BertConfig

    return BertConfig(
        hidden_size=N,
        num_attention_heads=H,
        num_hidden_layers=LAYERS,
        intermediate_size=FFN,
        vocab_size=VOCAB,
        max_position_embeddings=MAX_POS,
    )


def _roberta() -> Any:
    from transformers import RobertaConfig

    return RobertaConfig(
        hidden_size=N,
        num_attention_heads=H,
        num_hidden_layers=LAYERS,
        intermediate_size=FFN,
        vocab_size=VOCAB,
        max_position_embeddings=MAX_POS,
    )


@dataclass(frozen=True)
class Family:
    """How to build one tiny model and where its attention modules are."""

    config: Callable[[], Any]
    attention: Callable[[Any, int], torch.nn.Module]
    causal: bool = True
    rotary: bool = False
    with_head: bool = False
    """Build the *ForCausalLM class (tensor names get a ``model.``/``transformer.`` prefix)."""


def _layers(model: Any) -> Any:
    return getattr(model, "model", model).layers


def _gpt2_blocks(model: Any) -> Any:
    return getattr(model, "transformer", model).h


FAMILIES: dict[str, Family] = {
    "gpt2": Family(_gpt2, lambda m, i: _gpt2_blocks(m)[i].attn, with_head=True),
    "opt": Family(_opt, lambda m, i: m.decoder.layers[i].self_attn),
    "bloom": Family(_bloom, lambda m, i: m.h[i].self_attention),
    "gpt_neox": Family(_gpt_neox, lambda m, i: m.layers[i].attention, rotary=True),
    "llama": Family(_llama, lambda m, i: _layers(m)[i].self_attn, rotary=True, with_head=True),
    "mistral": Family(_mistral, lambda m, i: _layers(m)[i].self_attn, rotary=True),
    "qwen2": Family(_qwen2, lambda m, i: _layers(m)[i].self_attn, rotary=True),
    "qwen3": Family(_qwen3, lambda m, i: _layers(m)[i].self_attn, rotary=True, with_head=True),
    "gemma3_text": Family(
        _gemma3, lambda m, i: _layers(m)[i].self_attn, rotary=True, with_head=True
    ),
    "bert": Family(_bert, lambda m, i: m.encoder.layer[i].attention.self, causal=False),
    "roberta": Family(_roberta, lambda m, i: m.encoder.layer[i].attention.self, causal=False),
}


def randomize(model: torch.nn.Module, seed: int) -> None:
    """Overwrite every parameter: matrices/biases ~ N(0, WEIGHT_STD), norm gains ~ 1 + N(0, .2).

    transformers' default init (std 0.02, zero biases, unit gains) makes attention nearly
    uniform and biases vanish, which would hide extraction errors.
    """
    gen = torch.Generator().manual_seed(seed)
    gemma = "gemma" in type(model).__name__.lower()
    gains = {
        id(module.weight)
        for module in model.modules()
        if "norm" in type(module).__name__.lower() and getattr(module, "weight", None) is not None
    }
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=gen, dtype=param.dtype)
            if id(param) in gains:  # Gemma stores w and multiplies by (1 + w)
                param.copy_((0.0 if gemma else 1.0) + 0.2 * noise)
            elif "embed" in name or "wte" in name or "wpe" in name:
                param.copy_(noise)
            else:
                param.copy_(WEIGHT_STD * noise)


def build(family: str, directory: Path, seed: int = 0, **overrides: Any) -> torch.nn.Module:
    """Build a tiny random ``family`` model, save it to ``directory``; return it (float64, eval).
    ``overrides`` set config attributes (e.g. ``n_head=2, n_layer=1``: a model of two heads)."""
    from transformers import AutoModel, AutoModelForCausalLM

    torch.manual_seed(seed)
    config = FAMILIES[family].config()
    for name, value in overrides.items():
        setattr(config, name, value)
    auto = AutoModelForCausalLM if FAMILIES[family].with_head else AutoModel
    model = auto.from_config(config, attn_implementation="eager")
    randomize(model, seed)
    model.save_pretrained(directory, safe_serialization=True)
    return model.double().eval()


@dataclass
class Run:
    """A forward pass: per layer the attention input ``(T, N)`` and probabilities ``(H, T, T)``."""

    hidden: list[np.ndarray]
    probs: list[np.ndarray]
    position_ids: np.ndarray


def run(family: str, model: torch.nn.Module, position_ids: np.ndarray, seed: int = 1) -> Run:
    """Run ``model`` on random tokens at ``position_ids``; capture each layer's attention input."""
    spec = FAMILIES[family]
    n_layers = model.config.num_hidden_layers
    seq = len(position_ids)
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (1, seq), generator=gen)
    hidden: list[np.ndarray] = [np.empty(0)] * n_layers

    def hook(layer: int) -> Callable[..., None]:
        def capture(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            states = args[0] if args else kwargs["hidden_states"]
            hidden[layer] = states[0].detach().double().numpy().copy()

        return capture

    handles = [
        spec.attention(model, i).register_forward_pre_hook(hook(i), with_kwargs=True)
        for i in range(n_layers)
    ]
    kwargs: dict[str, Any] = dict(input_ids=tokens, output_attentions=True)
    if spec.rotary:
        kwargs["position_ids"] = torch.as_tensor(position_ids)[None]
    try:
        with torch.no_grad():
            out = model(**kwargs)
    finally:
        for handle in handles:
            handle.remove()
    probs = [a[0].double().numpy() for a in out.attentions]
    return Run(hidden, probs, np.asarray(position_ids))


def attention_scale(family: str, model: torch.nn.Module, layer: int) -> float:
    """The positive factor the model multiplies ``q . k`` by (scores are scale-sensitive)."""
    module = FAMILIES[family].attention(model, layer)
    if family == "bloom":
        return float(module.inv_norm_factor)
    return float(module.scaling)


def alibi(model: torch.nn.Module, seq: int) -> np.ndarray:
    """BLOOM's ALiBi bias ``(H, seq)`` per key, from transformers' own function."""
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    mask = torch.ones(1, seq, dtype=torch.long)
    bias = build_alibi_tensor(mask, model.config.n_head, torch.float64)
    return bias.reshape(model.config.n_head, seq).numpy()


def qk_norm_eps(model: torch.nn.Module) -> float:
    """The epsilon of the model's QK-norm (RMSNorm) layers."""
    return float(model.config.rms_norm_eps)


# ---------------------------------------------------------------------------------------------
# Predicting the model's scores from extracted factors

Factors = Callable[[int], tuple[np.ndarray, np.ndarray]]
"""``factors(d) -> (Q', K')`` over augmented inputs ``[x, 1]``: the form at relative position d."""


def with_bias_column(weights: Any) -> Any:
    """The layer's weights with the bias appended as an extra input column (``x -> [x, 1]``).

    Gains and rotations act on the head-dim axis only, so the engine's own
    ``effective_factors`` transforms weight and bias together, as the model does.
    """
    from dataclasses import replace

    def aug(w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        col = np.zeros(w.shape[:-1]) if b is None else b
        return np.concatenate([w, col[..., None]], axis=-1)

    return replace(weights, q=aug(weights.q, weights.q_bias), k=aug(weights.k, weights.k_bias))


def predict_scores(
    factors: Factors,
    raw: tuple[np.ndarray, np.ndarray],
    hidden: np.ndarray,
    kv_of_head: np.ndarray,
    positions: np.ndarray,
    scale: float,
    qk_norm_eps: float | None = None,
    key_bias: np.ndarray | None = None,
) -> np.ndarray:
    """Scores ``(H, T, T)`` (query t, key s) that the extracted forms imply.

    ``raw``: the un-normalised augmented ``(Q, K)`` (their per-head RMS is the QK-norm factor);
    ``key_bias``: an additive per-key bias ``(H, T)`` (ALiBi).
    """
    x = np.concatenate([hidden, np.ones((len(hidden), 1))], axis=1)
    dist = positions[:, None] - positions[None, :]
    norm = np.ones((len(kv_of_head), len(x), len(x)))
    if qk_norm_eps is not None:
        rq = np.sqrt(np.mean(np.einsum("hnm,tm->htn", raw[0], x) ** 2, -1) + qk_norm_eps)
        rk = np.sqrt(np.mean(np.einsum("hnm,tm->htn", raw[1], x) ** 2, -1) + qk_norm_eps)
        norm = rq[:, :, None] * rk[kv_of_head][:, None, :]
    scores = np.zeros_like(norm)
    for d in np.unique(dist):
        q, k = factors(int(d))
        qx = np.einsum("hnm,tm->htn", q, x)
        ky = np.einsum("hnm,tm->htn", k, x)[kv_of_head]
        at_d = dist == d
        scores[:, at_d] = np.einsum("htn,hsn->hts", qx, ky)[:, at_d]
    scores = scale * scores / norm
    if key_bias is not None:
        scores = scores + key_bias[:, None, :]
    return scores


def log_prob_error(probs: np.ndarray, scores: np.ndarray, causal: bool) -> float:
    """Max |log p_model - log_softmax(scores)| over the keys each query can see."""
    seq = probs.shape[-1]
    visible = np.tril(np.ones((seq, seq), bool)) if causal else np.ones((seq, seq), bool)
    masked = np.where(visible, scores, -np.inf)
    top = masked.max(-1, keepdims=True)
    log_pred = masked - top - np.log(np.exp(masked - top).sum(-1, keepdims=True))
    return float(np.max(np.abs(np.log(probs[:, visible]) - log_pred[:, visible])))


# ---------------------------------------------------------------------------------------------
# A training run saved as transformers' Trainer saves it


def train_run(
    family: str,
    run: Path,
    steps: tuple[int, ...] = (0, 2, 4),
    seed: int = 0,
    learning_rate: float = 0.05,
    **overrides: Any,
) -> list[Path]:
    """Train a tiny random ``family`` language model with Adam on random tokens and save it at
    each of ``steps`` (step 0: the initial weights) as ``run/checkpoint-STEP/`` (safetensors,
    ``save_pretrained``), as ``Trainer`` lays a run out; return the folders in step order."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    config = FAMILIES[family].config()
    for name, value in overrides.items():
        setattr(config, name, value)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    randomize(model, seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    gen = torch.Generator().manual_seed(seed + 1)
    folders = []
    for step in range(max(steps) + 1):
        if step in steps:
            folder = run / f"checkpoint-{step}"
            model.save_pretrained(folder, safe_serialization=True)
            folders.append(folder)
        tokens = torch.randint(0, VOCAB, (4, 16), generator=gen)
        loss = model(input_ids=tokens, labels=tokens).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return folders
