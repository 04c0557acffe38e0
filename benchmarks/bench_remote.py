"""Range requests: bytes transferred to analyse a sharded checkpoint, vs downloading its shards.

Writes a scaled-down Mistral-like checkpoint under /tmp (bf16, 10 layers, N 1280, 8/2 heads,
n 128, MLP 8192, vocab 32768: the same proportions of attention to everything else as
Mistral-Small-24B; every shard holds attention weights, so "download only the shards with Q/K"
downloads everything), serves it from a loopback HTTP server with Range support, and runs the
whole analysis through :class:`headforms.readers.remote.RemoteSafetensorsReader`: cold (empty
range cache), then warm (cached ranges), beside the same analysis from the local files. Also
prints the figure for the real Mistral-Small-24B from its shapes. Everything is deleted at exit;
only 127.0.0.1 is contacted.

Run: ``.venv/bin/python benchmarks/bench_remote.py``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _common import limit_threads, machine_line, print_table

LAYERS, N, HEADS, KV, HEAD_DIM, FFN, VOCAB, SHARDS = 10, 1280, 8, 2, 128, 8192, 32768, 5
REPO, COMMIT = "bench/mini-mistral", "f" * 40


def write_checkpoint(directory: Path) -> None:
    import torch
    from safetensors.torch import save_file

    gen = torch.Generator().manual_seed(0)
    config = {
        "model_type": "mistral",
        "hidden_size": N,
        "intermediate_size": FFN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV,
        "head_dim": HEAD_DIM,
        "vocab_size": VOCAB,
    }
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config))

    def w(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen) * shape[-1] ** -0.5).to(torch.bfloat16)

    weight_map = {}
    per = LAYERS // SHARDS
    for shard in range(SHARDS):
        fname = f"model-{shard + 1:05d}-of-{SHARDS:05d}.safetensors"
        t = {}
        if shard == 0:
            t["model.embed_tokens.weight"] = w(VOCAB, N)
        if shard == SHARDS - 1:
            t["lm_head.weight"] = w(VOCAB, N)
        for i in range(shard * per, (shard + 1) * per):
            a, m = f"model.layers.{i}.self_attn.", f"model.layers.{i}.mlp."
            t[a + "q_proj.weight"] = w(HEADS * HEAD_DIM, N)
            t[a + "k_proj.weight"] = w(KV * HEAD_DIM, N)
            t[a + "v_proj.weight"] = w(KV * HEAD_DIM, N)
            t[a + "o_proj.weight"] = w(N, HEADS * HEAD_DIM)
            t[m + "gate_proj.weight"] = w(FFN, N)
            t[m + "up_proj.weight"] = w(FFN, N)
            t[m + "down_proj.weight"] = w(N, FFN)
        save_file(t, str(directory / fname))
        weight_map.update(dict.fromkeys(t, fname))
    (directory / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map})
    )


class RangeHandler(BaseHTTPRequestHandler):
    """``GET /<repo>/resolve/<commit>/<file>`` with single-range support; counts bytes sent."""

    def do_GET(self) -> None:  # noqa: N802
        prefix = f"/{REPO}/resolve/{COMMIT}/"
        name = self.path[len(prefix) :] if self.path.startswith(prefix) else ""
        path = self.server.root / name  # type: ignore[attr-defined]
        if not name or "/" in name or not path.is_file():
            self.send_error(404)
            return
        size = path.stat().st_size
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        start, end = (int(match.group(1)), int(match.group(2) or size - 1)) if match else (0, -1)
        end = min(end, size - 1)
        with path.open("rb") as fh:
            fh.seek(start)
            body = fh.read(end - start + 1) if match else fh.read()
        self.send_response(206 if match else 200)
        if match:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.sent += len(body)  # type: ignore[attr-defined]

    def log_message(self, *args: object) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="headforms-bench-remote-", dir="/tmp"))
    server = None
    try:
        from headforms.models.source import open_model
        from headforms.readers.remote import RangeFetcher, RemoteSafetensorsReader
        from headforms.streaming import compute_analysis

        model = work / "mini-mistral"
        write_checkpoint(model)
        shards = sorted(p.name for p in model.glob("*.safetensors"))
        total = sum((model / s).stat().st_size for s in shards)
        server = ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
        server.root, server.sent = model, 0  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}/{REPO}/resolve/{COMMIT}/"
        rows = []
        with limit_threads(args.threads):
            print(machine_line(args.threads))
            source = open_model(str(model))
            start = time.perf_counter()
            local = compute_analysis(source)
            rows.append(
                {
                    "route": "local files",
                    "wall s": time.perf_counter() - start,
                    "bytes transferred": 0,
                    "requests": 0,
                    "fraction of checkpoint": 0.0,
                }
            )
            for label in ("range requests, cold", "range requests, cached"):
                sent = server.sent  # type: ignore[attr-defined]
                start = time.perf_counter()
                fetcher = RangeFetcher(base)
                source.reader = RemoteSafetensorsReader(fetcher, shards, work / "ranges")
                result = compute_analysis(source)
                assert result.heads["energy"].tolist() == local.heads["energy"].tolist()
                moved = server.sent - sent  # type: ignore[attr-defined]
                rows.append(
                    {
                        "route": label,
                        "wall s": time.perf_counter() - start,
                        "bytes transferred": moved,
                        "requests": fetcher.requests,
                        "fraction of checkpoint": moved / total,
                    }
                )
        print_table(
            f"Mini-Mistral ({LAYERS} layers, {total / 1e6:.0f} MB in {SHARDS} shards, every shard "
            "holds Q/K) over loopback HTTP; results identical to the local files",
            rows,
        )
        qk = 40 * 5120 * (32 + 8) * 128 * 2
        full = 23.57e9 * 2
        print(
            f"\nMistral-Small-24B-Base (bf16, ~{full / 1e9:.1f} GB in 10 shards, all holding Q/K): "
            f"range requests fetch the Q/K bytes, {qk / 1e9:.2f} GB = {qk / full:.1%} of the "
            "checkpoint, plus ~16 KiB of header per shard."
        )
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
