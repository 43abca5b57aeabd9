"""A ResNet-style CNN, written here (no torchvision): basic blocks for the small model that
tests trace and run, bottleneck blocks for the ResNet-50-sized model the benchmark traces.

    conformance trace examples/resnet.py --backend mlu
    conformance trace examples/resnet.py:make_resnet50 --meta --backend mlu

The head pools to 2x2 (``AdaptiveAvgPool2d((2, 2))``) rather than 1x1: ATen computes a 1x1
adaptive average pool as a ``mean``, so only a larger output reaches ``_adaptive_avg_pool2d``
and its backward, the op ports most often lack.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = _downsample(inplanes, planes * self.expansion, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (self.downsample(x) if self.downsample is not None else x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.downsample = _downsample(inplanes, planes * self.expansion, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + (self.downsample(x) if self.downsample is not None else x))


def _downsample(inplanes: int, outplanes: int, stride: int) -> nn.Module | None:
    if stride == 1 and inplanes == outplanes:
        return None
    return nn.Sequential(nn.Conv2d(inplanes, outplanes, 1, stride=stride, bias=False),
                         nn.BatchNorm2d(outplanes))


class ResNet(nn.Module):
    def __init__(self, block: type[BasicBlock] | type[Bottleneck], layers: list[int],
                 widths: list[int], *, stem: int = 64, classes: int = 1000, pool: int = 1) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, stem, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(stem),
            nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2, padding=1),
        )
        stages: list[nn.Module] = []
        inplanes = stem
        for i, (n, width) in enumerate(zip(layers, widths, strict=True)):
            for j in range(n):
                stride = 2 if i > 0 and j == 0 else 1
                stages.append(block(inplanes, width, stride))
                inplanes = width * block.expansion
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d((pool, pool))
        self.fc = nn.Linear(inplanes * pool * pool, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.stages(self.stem(x))), 1))


def _classification(model: nn.Module, images: torch.Tensor, classes: int) -> dict[str, Any]:
    labels = torch.randint(0, classes, (images.shape[0],))
    return {"model": model, "input": images,
            "loss": lambda logits: F.cross_entropy(logits, labels.to(logits.device))}


def make() -> dict[str, Any]:
    """A small ResNet (two basic-block stages, ~20k parameters) on a 2x3x32x32 batch."""
    model = ResNet(BasicBlock, [1, 1], [8, 16], stem=8, classes=10, pool=2)
    return _classification(model, torch.randn(2, 3, 32, 32), 10)


def make_resnet50() -> dict[str, Any]:
    """ResNet-50's shape (bottleneck blocks 3-4-6-3, ~25.6M parameters) on 8x3x224x224;
    meant for ``--meta``."""
    model = ResNet(Bottleneck, [3, 4, 6, 3], [64, 128, 256, 512], classes=1000, pool=1)
    return _classification(model, torch.randn(8, 3, 224, 224), 1000)
