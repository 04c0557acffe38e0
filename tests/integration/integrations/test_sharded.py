"""A sharded model recorded where it lives: two processes (torch.distributed over gloo on the CPU)
hold a tiny llama whose Q/K weights are DTensor shards (half the rows on each rank, as tensor
parallelism and FSDP2 hold them); record() on both gathers the shards together, only rank 0
computes and writes, and its record equals the analysis of the whole model's checkpoint."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest
import tiny_models as tm
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from headforms import analyze
from headforms.columns import METRIC_COLUMNS
from headforms.integrations import record
from headforms.series import trajectory

pytestmark = pytest.mark.slow  # two processes importing transformers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shard_and_record(rank: int, world: int, port: int, root: str) -> None:
    from torch.distributed.tensor import Shard, distribute_tensor, init_device_mesh
    from transformers import AutoModelForCausalLM

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    try:
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(tm.FAMILIES["llama"].config())
        if rank == 0:
            model.save_pretrained(Path(root) / "whole")
        mesh = init_device_mesh("cpu", (world,))
        for layer in model.model.layers:
            for projection in (layer.self_attn.q_proj, layer.self_attn.k_proj):
                shards = distribute_tensor(projection.weight.data, mesh, [Shard(0)])
                projection.weight = torch.nn.Parameter(shards)
        local = model.model.layers[0].self_attn.q_proj.weight.to_local()
        assert local.shape[0] == tm.N // world  # each rank holds half the rows
        scalars = record(model, 5, out=Path(root) / f"rank{rank}")
        assert (scalars is not None) == (rank == 0)
        dist.barrier()  # both ranks done before either tears down (rank 0 holds the store)
    finally:
        dist.destroy_process_group()


def test_a_sharded_model_is_gathered_and_recorded_by_rank_0_only(tmp_path: Path) -> None:
    mp.spawn(shard_and_record, args=(2, free_port(), str(tmp_path)), nprocs=2, join=True)
    assert not (tmp_path / "rank1").exists()
    recorded = trajectory(str(tmp_path / "rank0"))
    assert recorded.steps == (5,)
    whole = analyze(str(tmp_path / "whole")).columns
    for name in METRIC_COLUMNS:
        got, want = np.asarray(recorded.at(0)[name]), np.asarray(whole[name])
        if want.dtype == object:
            assert (got == want).all(), name
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)
