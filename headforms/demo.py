"""The demo models: a tiny training run and a fine-tuned pair that headforms builds itself, so that
the Training run and Model diff views show something on a fresh install (no bundled model has
checkpoints, and no two bundled models share their shapes).

What it is, honestly: a tiny llama-family model (:data:`SHAPES`: 2 layers x 4 query heads, 2 kv
heads, N = 64, n = 16; about 0.1 M parameters), character-level, trained from a seeded random
initialisation for :data:`TRAIN_STEPS` steps on the shipped text (the Declaration of
Independence, :mod:`headforms.interventions.text`) by transformers' ``Trainer`` with the
:class:`headforms.integrations.HeadformsCallback` recording every head every
:data:`CHECKPOINT_EVERY` steps into a run store (step 0 is the initialisation): the path a user
takes with a model of their own. The last weights are saved as model A of the pair, and
fine-tuned :data:`FINETUNE_STEPS` more steps on the text's last quarter only as model B. It is
not a real language model: its heads are what a few hundred steps of a toy make of 8 KB of text.

The build is seeded and deterministic (one CPU thread: the same seed gives the same weights on
one machine, :attr:`Demo.fingerprint`), takes seconds and writes about a MB into the cache
directory (:func:`demo_directory`), atomically: into a hidden folder renamed into place when
complete, under a lock, so that a crash leaves no half-written demo and two processes never
build it twice (:func:`build_demo`; :func:`built_demo` reads a finished one, never builds).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import OptionError
from .progress import Progress
from .sources.specs import DEMO_PREFIX
from .store import location
from .store.location import DEMO_SEED, DEMO_VERSION
from .store.locks import key_lock

if TYPE_CHECKING:
    import torch

TRAIN_STEPS = 200
CHECKPOINT_EVERY = 25
FINETUNE_STEPS = 50
BATCH, CONTEXT = 8, 48
"""Sequences per step and characters per sequence."""
LEARNING_RATE = 3e-3
SHAPES = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 128,
}
"""The tiny llama's shapes (its config besides the vocabulary)."""
MAX_SEED = 2**31 - 1
MANIFEST = "demo.json"
"""Written last in a build: a demo folder with it is complete."""

RUN_DESCRIPTION = (
    f"a tiny llama-family model (2 layers x 4 heads, N = 64) trained by transformers' Trainer for "
    f"{TRAIN_STEPS} steps on the shipped text (the Declaration of Independence, characters), "
    f"its heads recorded every {CHECKPOINT_EVERY} steps by headforms' Trainer callback"
)
PAIR_DESCRIPTION = (
    f"A is its last weights, B those weights fine-tuned {FINETUNE_STEPS} more steps on the "
    "text's last quarter"
)
DESCRIPTION = f"{RUN_DESCRIPTION}; {PAIR_DESCRIPTION}. A toy, not a real model"
"""What the demo is, in one line (the command line and the dashboard say it)."""


@dataclass(frozen=True)
class Demo:
    """A built demo: its folders, its steps and the fingerprint of its weights."""

    directory: Path
    seed: int
    steps: tuple[int, ...]
    fingerprint: str
    """SHA-256 over every weight file, in order (the same seed: the same fingerprint)."""

    @property
    def run(self) -> Path:
        """The training run: the run store its Trainer callback wrote (a record per step)."""
        return self.directory / "run"

    @property
    def base(self) -> Path:
        """Model A of the pair: the run's last weights (the run's last record is theirs)."""
        return self.directory / "base"

    @property
    def finetuned(self) -> Path:
        """Model B of the pair: A fine-tuned on the text's last quarter."""
        return self.directory / "finetuned"

    def spec(self, path: Path) -> str:
        """The spec naming ``path`` (one of this demo's folders): ``demo:PART`` for the default
        seed's demo (no cache path in titles or links; :data:`~headforms.sources.specs.
        DEMO_PREFIX`), else the path."""
        if self.seed != DEMO_SEED:
            return str(path)
        return DEMO_PREFIX + path.relative_to(self.directory).as_posix()

    def weight_files(self) -> list[Path]:
        """The weight files of the demo: A, then B."""
        return [folder / "model.safetensors" for folder in (self.base, self.finetuned)]


def check_seed(seed: object) -> int:
    """A demo seed (a whole number from 0 to :data:`MAX_SEED`), or a one-line error."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise OptionError(f"demo seed {seed!r}: a whole number from 0 to {MAX_SEED}")
    return seed


def demo_directory(seed: int = DEMO_SEED) -> Path:
    """Where the demo of ``seed`` lives: ``<cache>/demo/v<version>-seed<seed>`` (the version,
    :data:`DEMO_VERSION`, is bumped when the recipe here changes: a new folder, the old one left
    alone). The default seed's parts are also named by specs: ``demo:run``, ``demo:base``,
    ``demo:finetuned`` (:meth:`Demo.spec`)."""
    return location.demo_directory(check_seed(seed))


def built_demo(seed: int = DEMO_SEED) -> Demo | None:
    """The demo of ``seed`` if it is built (its manifest written last), else None; builds
    nothing."""
    directory = demo_directory(seed)
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        return Demo(directory, seed, tuple(manifest["steps"]), str(manifest["fingerprint"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def build_demo(seed: int = DEMO_SEED, progress: Progress | None = None) -> Demo:
    """The demo of ``seed``: the one built before, else built now (module doc), once across
    threads and processes; ``progress`` says what it is doing."""
    directory = demo_directory(seed)
    found = built_demo(seed)
    if found is not None:
        return found
    with key_lock(f"demo-v{DEMO_VERSION}-seed{seed}"):
        found = built_demo(seed)  # built by another while this one waited
        if found is not None:
            return found
        directory.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(directory, ignore_errors=True)  # an incomplete one (no manifest)
        building = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}."))
        try:
            steps, fingerprint = _build(building, seed, progress or _quiet)
            manifest = {
                "version": DEMO_VERSION,
                "seed": seed,
                "steps": list(steps),
                "fingerprint": fingerprint,
                "what": DESCRIPTION,
            }
            (building / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
            os.chmod(building, 0o755)  # mkdtemp makes it private
            os.replace(building, directory)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
    return Demo(directory, seed, steps, fingerprint)


def _quiet(done: int, total: int, message: str) -> None:
    """No progress shown."""


@contextmanager
def _one_thread() -> Iterator[None]:
    """torch on one thread while the demo trains (the same sums in the same order: the same
    weights for a seed), restored afterwards."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _build(directory: Path, seed: int, progress: Progress) -> tuple[tuple[int, ...], str]:
    """Train and save the demo into ``directory``: its steps and weights' fingerprint."""
    total = TRAIN_STEPS + FINETUNE_STEPS
    progress(0, total, "loading torch and transformers")
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from .integrations import HeadformsCallback
    from .interventions.text import DEFAULT_TEXT
    from .run_store import run_state

    tokenizer = char_tokenizer(DEFAULT_TEXT)
    ids = torch.tensor(tokenizer.encode(DEFAULT_TEXT), dtype=torch.long)
    with _one_thread():
        torch.manual_seed(seed)
        config = LlamaConfig(vocab_size=len(tokenizer), tie_word_embeddings=False, **SHAPES)
        model = LlamaForCausalLM(config).float()
        batches = torch.Generator().manual_seed(seed)
        recording = HeadformsCallback(every=CHECKPOINT_EVERY, out=directory / "run", log=False)

        windows = text_windows(ids, TRAIN_STEPS * BATCH, batches)
        scratch = directory / ".trainer"
        _train(model, windows, TRAIN_STEPS, seed, scratch, [recording], progress, (0, total, ""))
        _save(model, tokenizer, directory / "base")
        tail = text_windows(ids[len(ids) * 3 // 4 :], FINETUNE_STEPS * BATCH, batches)

        said = (TRAIN_STEPS, total, "fine-tuning B: ")
        _train(model, tail, FINETUNE_STEPS, seed, scratch, [], progress, said)
        _save(model, tokenizer, directory / "finetuned")
    shutil.rmtree(directory / ".trainer", ignore_errors=True)
    demo = Demo(directory, seed, (), "")
    return run_state(demo.run).steps, weights_fingerprint(demo.weight_files())


def text_windows(ids: torch.Tensor, count: int, generator: torch.Generator) -> Any:
    """``count`` windows of :data:`CONTEXT` characters of ``ids`` at seeded random places, as a
    dataset of ``{"input_ids", "labels"}`` (the labels are the inputs: the model shifts them to
    predict the next character)."""
    import torch

    starts = torch.randint(0, len(ids) - CONTEXT, (count,), generator=generator).tolist()
    windows = torch.stack([ids[s : s + CONTEXT] for s in starts])
    return [{"input_ids": w, "labels": w} for w in windows]


def _train(
    model: Any,
    windows: Any,
    steps: int,
    seed: int,
    scratch: Path,
    callbacks: list[Any],
    progress: Progress,
    said: tuple[int, int, str],
) -> None:
    """``steps`` optimizer steps of ``model`` on ``windows`` (:data:`BATCH` a step) with
    transformers' ``Trainer`` on the CPU: AdamW at a constant :data:`LEARNING_RATE`, seeded,
    nothing saved or logged (``scratch``: its output directory, left empty); ``callbacks``
    beside a progress report every 5 steps (``said``: the steps done before these, of how
    many, and what the message starts with)."""
    before, total, prefix = said
    from transformers import Trainer, TrainerCallback, TrainingArguments
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    class Report(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            if state.global_step % 5 == 0:
                step = state.global_step
                progress(before + step, total, f"{prefix}training step {step}/{steps}")

    arguments = TrainingArguments(
        output_dir=str(scratch),
        max_steps=steps,
        per_device_train_batch_size=BATCH,
        learning_rate=LEARNING_RATE,
        lr_scheduler_type="constant",
        weight_decay=0.01,
        seed=seed,
        use_cpu=True,
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = Trainer(
        model=model, args=arguments, train_dataset=windows, callbacks=[*callbacks, Report()]
    )
    for printer in (PrinterCallback, ProgressCallback):  # the run's last metrics, not printed
        trainer.remove_callback(printer)
    trainer.train()


def _save(model: Any, tokenizer: Any, folder: Path) -> None:
    """A checkpoint folder as transformers saves one: config, safetensors (float32, the
    metadata transformers reads), tokenizer."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(folder)
    tensors = {name: value.detach().contiguous() for name, value in model.state_dict().items()}
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    tokenizer.save_pretrained(folder)


def char_tokenizer(text: str) -> Any:
    """A character-level tokenizer of ``text``'s characters (a BPE without merges), with an
    unknown token for any other character, so that the demo runs on any prompt."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, **{c: i + 1 for i, c in enumerate(sorted(set(text)))}}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")


def weights_fingerprint(files: list[Path]) -> str:
    """SHA-256 over ``files``' bytes, in order."""
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(2**20), b""):
                digest.update(block)
    return digest.hexdigest()
