"""The Trainer callback's cost: SmolLM2-135M-sized training steps on the CPU with transformers'
``Trainer``, without the callback and with ``HeadformsCallback(every=50)`` (a record at the start,
at every 50th step and at the end), side by side in one process.

The model is a llama of SmolLM2-135M's shapes (30 layers, N = 576, 9 heads, 3 key heads, n = 64,
MLP 1536, vocabulary 49,152: 135 M parameters), randomly initialised (no hub), trained on
windows of the shipped text (bytes as tokens). Each route trains ``--steps`` optimizer steps
(default 50: records at 0 and 50) from the same initial weights, the routes alternating
``--repeat`` times; torch and BLAS on ``--threads`` threads. Printed: the median wall time of a
route, its time per step, each record's own time (measured inside the callback), and the
overhead of one record per ``--every`` steps as a share of step time: against the run without
the callback, and against the steps of the run with it (its wall time less its records: the
same moment's load). On a shared machine the two routes' wall times differ by the load of the
moment far more than by the records.

Run: ``.venv/bin/python benchmarks/bench_callback.py [--steps 50] [--repeat 1]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import limit_threads, machine_line, print_table

SMOLLM2 = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "vocab_size": 49152,
    "max_position_embeddings": 2048,
    "rope_theta": 100000.0,
    "tie_word_embeddings": True,
}
"""SmolLM2-135M's config (its config.json's shapes)."""


def windows(count: int, length: int) -> list[dict]:
    import torch

    from headforms.interventions.text import DEFAULT_TEXT

    ids = torch.tensor(list(DEFAULT_TEXT.encode()), dtype=torch.long)
    starts = torch.randint(
        0, len(ids) - length, (count,), generator=torch.Generator().manual_seed(0)
    )
    return [{"input_ids": ids[s : s + length], "labels": ids[s : s + length]} for s in starts]


def run(
    initial: dict, steps: int, every: int | None, out: Path, batch: int, length: int
) -> tuple[float, list[float]]:
    """Wall time of ``steps`` Trainer steps (with the callback every ``every`` steps, or none)
    and each record's own time."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    from headforms.integrations import HeadformsCallback

    model = LlamaForCausalLM(LlamaConfig(**SMOLLM2))
    model.load_state_dict(initial)
    record_times: list[float] = []
    callbacks = []
    if every is not None:
        callback = HeadformsCallback(every=every, out=out, log=False)
        recorder = callback.recorder
        real = recorder.record

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                record_times.append(time.perf_counter() - start)

        recorder.record = timed  # type: ignore[method-assign]
        callbacks.append(callback)
    arguments = TrainingArguments(
        output_dir=str(out / "trainer"),
        max_steps=steps,
        per_device_train_batch_size=batch,
        learning_rate=3e-4,
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    trainer = Trainer(
        model=model,
        args=arguments,
        train_dataset=windows(steps * batch, length),
        callbacks=callbacks,
    )
    torch.manual_seed(0)
    start = time.perf_counter()
    trainer.train()
    return time.perf_counter() - start, record_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--length", type=int, default=64)
    args = parser.parse_args()
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    limit_threads(args.threads)
    torch.set_num_threads(args.threads)
    print(machine_line(args.threads))
    torch.manual_seed(0)
    initial = LlamaForCausalLM(LlamaConfig(**SMOLLM2)).state_dict()
    walls: dict[str, list[float]] = {"without the callback": [], f"every={args.every}": []}
    records: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for route, every in (
                ("without the callback", None),
                (f"every={args.every}", args.every),
            ):
                wall, times = run(
                    initial, args.steps, every, Path(tmp) / f"{i}-{every}", args.batch, args.length
                )
                walls[route].append(wall)
                records.extend(times)
                print(
                    f"  {route}: {wall:.1f} s"
                    + (f", records {', '.join(f'{t:.2f}' for t in times)} s" if times else ""),
                    flush=True,
                )
        sizes = [p.stat().st_size for p in Path(tmp).glob("*/headforms-records/*.zip")]
    base = statistics.median(walls["without the callback"])
    per_run = len(records) / args.repeat
    rows = []
    for route, values in walls.items():
        wall = statistics.median(values)
        rows.append(
            {
                "route": route,
                "wall s": round(wall, 1),
                "s / step": round(wall / args.steps, 3),
                "vs without": f"{(wall - base) / base * 100:+.1f} %",
            }
        )
    print_table(f"{args.steps} Trainer steps, SmolLM2-135M shapes, CPU", rows)
    record = statistics.median(records)
    with_records = statistics.median(walls[f"every={args.every}"])
    step_with = (with_records - per_run * record) / args.steps  # the same run's steps alone
    print(
        f"record (SmolLM2-sized, 270 heads): median {record:.2f} s, {per_run:.0f} per run, "
        f"{statistics.median(sizes) / 2**20:.2f} MiB on disk"
    )
    print(
        f"one record per {args.every} steps, against the step time of the run without the "
        f"callback ({base / args.steps:.2f} s): {record / (args.every * base / args.steps):.2%}; "
        f"against the steps of the run with it ({step_with:.2f} s, measured beside its "
        f"records): {record / (args.every * step_with):.2%}"
    )


if __name__ == "__main__":
    main()
