"""What a study runs: its options and defaults (:class:`StudyOptions`), light enough for the
command line's parser (no pandas; the study itself is :mod:`headforms.study`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .errors import OptionError
from .interventions.edits import EDITS, FORM_EDITS, edit_named
from .interventions.text import TEXTS, check_text

WHOLE_MODEL_EDITS = (*FORM_EDITS, "output_zero", "output_mean")
"""The whole-model edits of a study by default (identity: the machinery's check)."""
SWEEP_EDITS = ("zero", "symmetric", "flip")
"""The per-head sweeps of a study by default."""
DEFAULT_STUDY_CONTROLS = 32
"""K of the whole-model edits by default."""
HEAD_CONTROLS = 1
"""Scores-matched controls per head, sweep edit and text (the dose-response's points)."""


@dataclass(frozen=True)
class StudyOptions:
    """What a study runs (module doc): ``texts`` by name (shipped) or as ``(label, text)``."""

    texts: tuple[tuple[str, str], ...] = tuple((name, t.text) for name, t in TEXTS.items())
    max_tokens: int = 128
    controls: int = DEFAULT_STUDY_CONTROLS
    seed: int = 0
    match: str = "scores"
    whole_edits: tuple[str, ...] = WHOLE_MODEL_EDITS
    sweep_edits: tuple[str, ...] = SWEEP_EDITS
    head_controls: int = HEAD_CONTROLS

    def __post_init__(self) -> None:
        if not self.texts:
            raise OptionError("a study needs at least one text")
        if not self.whole_edits and not self.sweep_edits:
            raise OptionError("a study needs whole-model edits, per-head sweeps or both")
        for _, text in self.texts:
            check_text(text)
        for name in (*self.whole_edits, *self.sweep_edits):
            edit_named(name)
        if not all(edit_named(e).edits_form for e in self.sweep_edits):
            raise OptionError("a per-head sweep edits the form: " + ", ".join(FORM_EDITS))

    def command(self, spec: str) -> str:
        """The command line that runs this study (``DIR`` for the output directory)."""
        import shlex

        texts = ",".join(label for label, _ in self.texts)
        return "headforms " + shlex.join(
            [
                "study", str(spec), "--texts", texts, "--max-tokens", str(self.max_tokens),
                "--controls", str(self.controls), "--head-controls", str(self.head_controls),
                "--edits", ",".join(self.whole_edits), "--sweeps", ",".join(self.sweep_edits),
                "--match", self.match, "--seed", str(self.seed), "--out", "DIR",
            ]
        )  # fmt: skip

    def passes(self, heads: int) -> int:
        """Sequence passes of the whole study (each one sequence from its edited layer up)."""
        whole = sum(1 + (self.controls if controlled(e) else 0) for e in self.whole_edits)
        sweeps = len(self.sweep_edits) * heads * (1 + self.head_controls)
        return len(self.texts) * (whole + sweeps)


def controlled(edit: str) -> bool:
    """Whether a study runs matched controls for this whole-model edit (form edits but identity)."""
    return EDITS[edit].edits_form and edit != "identity"


def texts_named(names: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """Shipped texts by name, or UTF-8 files by path, as ``(label, text)``."""
    from pathlib import Path

    from .interventions.text import read_text_file

    found = []
    for name in names:
        if name in TEXTS:
            found.append((name, TEXTS[name].text))
        elif Path(name).exists():
            found.append((Path(name).name, read_text_file(Path(name))))
        else:
            raise OptionError(
                f"--texts {name!r}: neither a shipped text ({', '.join(TEXTS)}) nor a file"
            )
    return tuple(found)
