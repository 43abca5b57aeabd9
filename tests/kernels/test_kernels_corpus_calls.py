"""Calls the recorded corpus (OpInfo samples) brought to mlu that the schema strategies had not:
each compared with CPU."""

from __future__ import annotations

import warnings

import pytest
import torch

import kernels

kernels.install()


@pytest.mark.parametrize("index", [torch.tensor(0), torch.tensor([0]), torch.tensor([0, 0]),
                                   torch.tensor([], dtype=torch.long)])
def test_index_select_of_a_0_dim_tensor_is_0_dim_as_cpu(index):
    x = torch.tensor(3 + 1j, dtype=torch.complex64)
    got = []
    for device in ("cpu", "mlu"):
        try:
            out = torch.index_select(x.to(device), 0, index.to(device))
            got.append((tuple(out.shape), out.cpu().item()))
        except RuntimeError as exc:
            got.append(str(exc).splitlines()[0][:60])
    assert got[0] == got[1]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", ["scatter_reduce_add", "scatter_add"])
def test_16_bit_scatter_sums_accumulate_as_cpu(op, dtype):
    # repeated indices: CPU sums in float32 and rounds once; a float16 running sum drifts
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(10, 5, generator=gen) * 4).to(dtype)
    src = (torch.randn(5, 5, generator=gen) * 4).to(dtype)
    idx = torch.randint(0, 10, (5, 5), generator=gen)
    idx[:, 1] = 1

    def run(device):
        a, i, s = x.to(device), idx.to(device), src.to(device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scatter's reduce= is deprecated
            out = (torch.scatter(a, 0, i, s, reduce="add") if op == "scatter_reduce_add"
                   else torch.scatter_add(a, 0, i, s))
        return out.cpu()

    assert torch.equal(run("mlu"), run("cpu"))
