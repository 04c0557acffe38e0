"""What the callback and record() refuse, each in one line before any record is written: bad
arguments, a module that is not a transformers model, weights that are not in memory (the meta
device), LoRA adapters, a RoPE position for a model without RoPE, a store of another model."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiny_models as tm
import torch

from headforms.errors import HeadformsError, ModelSpecError, OptionError
from headforms.integrations import HeadformsCallback, record


def model(family: str = "llama"):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(tm.FAMILIES[family].config())


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"every": 0}, "every 0: a whole number of optimizer steps"),
        ({"every": 2.5}, "every 2.5"),
        ({"every": True}, "every True"),
        ({"log": "yes"}, "log 'yes': True or False"),
        ({"out": ""}, "out '': a directory"),
        ({"rope_position": 1.5}, "rope position 1.5"),
    ],
)
def test_bad_callback_arguments_are_one_line(arguments: dict, message: str) -> None:
    with pytest.raises(HeadformsError, match=message) as error:
        HeadformsCallback(**arguments)
    assert "\n" not in str(error.value)


def test_what_record_refuses_leaves_no_store(tmp_path: Path) -> None:
    out = tmp_path / "store"
    with pytest.raises(OptionError, match="step -1: a whole number"):
        record(model(), -1, out=out)
    with pytest.raises(ModelSpecError, match="Linear is not a transformers model"):
        record(torch.nn.Linear(4, 4), 0, out=out)
    with torch.device("meta"):
        offloaded = model()
    with pytest.raises(ModelSpecError, match="on the meta device"):
        record(offloaded, 0, out=out)
    adapted = model()  # a LoRA adapter's tensors beside the query weight, as peft names them
    adapted.model.layers[0].self_attn.q_proj.lora_A = torch.nn.Linear(tm.N, 4, bias=False)
    with pytest.raises(ModelSpecError, match="LoRA adapters"):
        record(adapted, 0, out=out)
    with pytest.raises(OptionError, match="RoPE models only"):
        record(model("gpt2"), 0, out=out, rope_position=3)
    assert not out.exists()
    record(model(), 0, out=out)
    with pytest.raises(OptionError, match="the run store of another run"):
        record(model("gpt2"), 1, out=out)
