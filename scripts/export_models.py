#!/usr/bin/python3
"""Exports the reference models Tessera is checked against: ResNet-50 and BERT-base (and, on request,
MobileNetV2 for the CPU bench: --only mobilenet_v2).

The architectures are defined here (torchvision and transformers are not available on Debian 12):
ResNet-50 follows torchvision's v1.5 layout (Bottleneck blocks, stride on the 3x3 conv), MobileNetV2
follows torchvision's (inverted residual blocks with ReLU6, width multiplier 1.0) and BERT-base
follows the original encoder (word + position + token-type embeddings, post-LayerNorm self-attention
and GELU feed-forward layers, tanh pooler). Weights are random (seed 0); BatchNorm and LayerNorm
parameters are randomized too, so that no normalization is an identity. The models run in eval mode
(the exporter folds BatchNorm into the convolutions; LayerNormalization stays an op).

For each model the script writes
    OUT/<model>/model.onnx               opset 17, dynamic batch (and sequence for BERT)
    OUT/<model>/inputs/<input name>.npy  the inputs the reference outputs were computed from
    OUT/<model>/outputs/<output name>.npy  PyTorch's outputs
tests/models/model_test.cc runs the ONNX model with Tessera and compares against outputs/.

    /usr/bin/python3 scripts/export_models.py --small --out build/models    # CI sizes, seconds
    /usr/bin/python3 scripts/export_models.py --out build/models_full       # full sizes, ~1 minute
"""

import argparse
import dataclasses
import math
import pathlib
import sys
import time

import numpy as np
import onnx
import torch
from torch import nn

OPSET = 17


# ---- ResNet-50 ---------------------------------------------------------------------------------


@dataclasses.dataclass
class ResNetConfig:
    blocks_per_stage: tuple = (3, 4, 6, 3)
    base_width: int = 64
    num_classes: int = 1000
    batch: int = 1
    image_size: int = 224


class Bottleneck(nn.Module):
    """1x1 reduce -> 3x3 (carries the stride) -> 1x1 expand (x4), plus the identity or a projection."""

    expansion = 4

    def __init__(self, in_channels, width, stride):
        super().__init__()
        out_channels = width * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False), nn.BatchNorm2d(out_channels))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, config):
        super().__init__()
        width = config.base_width
        self.conv1 = nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        stages, in_channels = [], width
        for index, num_blocks in enumerate(config.blocks_per_stage):
            stage_width = width * 2**index
            blocks = []
            for block in range(num_blocks):
                stride = 2 if index > 0 and block == 0 else 1
                blocks.append(Bottleneck(in_channels, stage_width, stride))
                in_channels = stage_width * Bottleneck.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_channels, config.num_classes)
        self._init_weights()

    def _init_weights(self):
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                randomize_norm(module.weight, module.bias)
                module.running_mean.normal_(0.0, 0.1)
                module.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---- MobileNetV2 ---------------------------------------------------------------------------------


@dataclasses.dataclass
class MobileNetConfig:
    # (expansion t, output channels c, repeats n, first stride s), as in the MobileNetV2 paper
    blocks: tuple = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                     (6, 320, 1, 1))
    stem_channels: int = 32
    last_channels: int = 1280
    num_classes: int = 1000
    batch: int = 1
    image_size: int = 224


def conv_bn_relu6(in_channels, out_channels, kernel, stride=1, groups=1):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(out_channels), nn.ReLU6())


class InvertedResidual(nn.Module):
    """1x1 expand (ReLU6) -> 3x3 depthwise (ReLU6, carries the stride) -> 1x1 linear projection, plus the
    identity when the stride is 1 and the channel count is unchanged."""

    def __init__(self, in_channels, out_channels, stride, expansion):
        super().__init__()
        hidden = in_channels * expansion
        layers = [conv_bn_relu6(in_channels, hidden, 1)] if expansion != 1 else []
        layers += [conv_bn_relu6(hidden, hidden, 3, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, out_channels, 1, bias=False), nn.BatchNorm2d(out_channels)]
        self.block = nn.Sequential(*layers)
        self.use_residual = stride == 1 and in_channels == out_channels

    def forward(self, x):
        return x + self.block(x) if self.use_residual else self.block(x)


class MobileNetV2(nn.Module):
    def __init__(self, config):
        super().__init__()
        layers, in_channels = [conv_bn_relu6(3, config.stem_channels, 3, stride=2)], config.stem_channels
        for expansion, channels, repeats, stride in config.blocks:
            for index in range(repeats):
                layers.append(InvertedResidual(in_channels, channels, stride if index == 0 else 1, expansion))
                in_channels = channels
        layers.append(conv_bn_relu6(in_channels, config.last_channels, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(config.last_channels, config.num_classes)
        self._init_weights()

    def _init_weights(self):
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out")
            elif isinstance(module, nn.BatchNorm2d):
                randomize_norm(module.weight, module.bias)
                module.running_mean.normal_(0.0, 0.1)
                module.running_var.uniform_(0.5, 1.5)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, 0.01)
                nn.init.zeros_(module.bias)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# ---- BERT-base ---------------------------------------------------------------------------------


@dataclasses.dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden: int = 768
    layers: int = 12
    heads: int = 12
    intermediate: int = 3072
    max_positions: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    batch: int = 1
    sequence: int = 128


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word = nn.Embedding(config.vocab_size, config.hidden)
        self.position = nn.Embedding(config.max_positions, config.hidden)
        self.token_type = nn.Embedding(config.type_vocab_size, config.hidden)
        self.norm = nn.LayerNorm(config.hidden, eps=config.layer_norm_eps)
        self.register_buffer("position_ids", torch.arange(config.max_positions).unsqueeze(0))
        # Single-segment inputs: every token has type 0, as in most inference deployments.
        self.register_buffer("token_type_ids", torch.zeros(1, config.max_positions, dtype=torch.long))

    def forward(self, input_ids):
        sequence = input_ids.shape[1]
        positions = self.position_ids[:, :sequence]
        token_types = self.token_type_ids[:, :sequence]
        return self.norm(self.word(input_ids) + self.position(positions) + self.token_type(token_types))


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads = config.heads
        self.head_size = config.hidden // config.heads
        self.query = nn.Linear(config.hidden, config.hidden)
        self.key = nn.Linear(config.hidden, config.hidden)
        self.value = nn.Linear(config.hidden, config.hidden)
        self.output = nn.Linear(config.hidden, config.hidden)
        self.norm = nn.LayerNorm(config.hidden, eps=config.layer_norm_eps)

    def split_heads(self, x):  # [batch, seq, hidden] -> [batch, heads, seq, head_size]
        return x.view(x.shape[0], x.shape[1], self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, hidden, additive_mask):
        q = self.split_heads(self.query(hidden))
        k = self.split_heads(self.key(hidden))
        v = self.split_heads(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + additive_mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3)
        context = context.reshape(hidden.shape[0], hidden.shape[1], self.heads * self.head_size)
        return self.norm(hidden + self.output(context))


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = BertSelfAttention(config)
        self.intermediate = nn.Linear(config.hidden, config.intermediate)
        self.gelu = nn.GELU()  # exact (erf) GELU, as in BERT
        self.output = nn.Linear(config.intermediate, config.hidden)
        self.norm = nn.LayerNorm(config.hidden, eps=config.layer_norm_eps)

    def forward(self, hidden, additive_mask):
        hidden = self.attention(hidden, additive_mask)
        return self.norm(hidden + self.output(self.gelu(self.intermediate(hidden))))


class Bert(nn.Module):
    """Outputs (last_hidden_state [batch, seq, hidden], pooler_output [batch, hidden])."""

    def __init__(self, config):
        super().__init__()
        self.embeddings = BertEmbeddings(config)
        self.layers = nn.ModuleList(BertLayer(config) for _ in range(config.layers))
        self.pooler = nn.Linear(config.hidden, config.hidden)
        self._init_weights()

    def _init_weights(self):
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, 0.02)
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.bias, 0.0, 0.02)
            elif isinstance(module, nn.LayerNorm):
                randomize_norm(module.weight, module.bias)

    def forward(self, input_ids, attention_mask):
        # 1 = attend, 0 = padding; padded keys get a large negative score before the softmax.
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        hidden = self.embeddings(input_ids)
        for layer in self.layers:
            hidden = layer(hidden, additive_mask)
        pooled = torch.tanh(self.pooler(hidden[:, 0]))
        return hidden, pooled


# ---- export --------------------------------------------------------------------------------------


def randomize_norm(weight, bias):
    """Scale near 1 and shift near 0, so a normalization layer is not an identity."""
    with torch.no_grad():
        weight.uniform_(0.5, 1.5)
        bias.normal_(0.0, 0.1)


@dataclasses.dataclass
class Export:
    model: nn.Module
    inputs: dict  # name -> tensor, in forward() order
    output_names: list
    dynamic_axes: dict


def resnet_export(small):
    config = ResNetConfig(blocks_per_stage=(1, 1, 1, 1), base_width=16, num_classes=10, batch=2,
                          image_size=64) if small else ResNetConfig()
    model = ResNet(config)
    image = torch.randn(config.batch, 3, config.image_size, config.image_size)
    return Export(model, {"input": image}, ["logits"], {"input": {0: "batch"}, "logits": {0: "batch"}})


def mobilenet_v2_export(small):
    config = MobileNetConfig(blocks=((1, 8, 1, 1), (6, 16, 2, 2), (6, 24, 2, 2)), stem_channels=8, last_channels=64,
                             num_classes=10, batch=2, image_size=64) if small else MobileNetConfig()
    model = MobileNetV2(config)
    image = torch.randn(config.batch, 3, config.image_size, config.image_size)
    return Export(model, {"input": image}, ["logits"], {"input": {0: "batch"}, "logits": {0: "batch"}})


def bert_export(small):
    config = BertConfig(vocab_size=1000, hidden=128, layers=2, heads=2, intermediate=512, max_positions=64,
                        batch=2, sequence=16) if small else BertConfig()
    model = Bert(config)
    input_ids = torch.randint(0, config.vocab_size, (config.batch, config.sequence))
    attention_mask = torch.ones(config.batch, config.sequence, dtype=torch.long)
    attention_mask[-1, config.sequence * 3 // 4:] = 0  # the last sequence ends in padding
    per_token = {0: "batch", 1: "sequence"}
    return Export(model, {"input_ids": input_ids, "attention_mask": attention_mask},
                  ["last_hidden_state", "pooler_output"],
                  {"input_ids": per_token, "attention_mask": per_token, "last_hidden_state": per_token,
                   "pooler_output": {0: "batch"}})


MODELS = {"resnet50": resnet_export, "bert_base": bert_export, "mobilenet_v2": mobilenet_v2_export}
DEFAULT_MODELS = ["resnet50", "bert_base"]  # what tests/models checks; the others are exported with --only


def progress(message):
    print(f"export_models.py: {message}", flush=True)


def export(name, small, out_dir, position):
    started = time.time()
    progress(f"{position} {name} ({'small' if small else 'full'}): building the PyTorch model")
    torch.manual_seed(0)
    spec = MODELS[name](small)
    spec.model.eval()
    model_dir = out_dir / name
    (model_dir / "inputs").mkdir(parents=True, exist_ok=True)
    (model_dir / "outputs").mkdir(parents=True, exist_ok=True)
    args = tuple(spec.inputs.values())
    progress(f"{position} {name}: reference outputs ({time.time() - started:.1f}s)")
    with torch.no_grad():
        outputs = spec.model(*args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    model_path = model_dir / "model.onnx"
    progress(f"{position} {name}: torch.onnx.export ({time.time() - started:.1f}s)")
    torch.onnx.export(spec.model, args, str(model_path), input_names=list(spec.inputs),
                      output_names=spec.output_names, dynamic_axes=spec.dynamic_axes, opset_version=OPSET,
                      do_constant_folding=True)
    progress(f"{position} {name}: checking the ONNX file, saving inputs and outputs ({time.time() - started:.1f}s)")
    onnx.checker.check_model(str(model_path))
    for input_name, tensor in spec.inputs.items():
        np.save(model_dir / "inputs" / f"{input_name}.npy", tensor.numpy())
    for output_name, tensor in zip(spec.output_names, outputs):
        np.save(model_dir / "outputs" / f"{output_name}.npy", tensor.numpy())
    describe(name, model_path, spec.inputs, dict(zip(spec.output_names, outputs)))


def shapes(named):
    return ", ".join(f"{key}{list(value.shape)}" for key, value in named.items())


def describe(name, model_path, inputs, outputs):
    graph = onnx.load(str(model_path), load_external_data=False).graph
    ops = sorted({node.op_type for node in graph.node})
    print(f"{name}: {model_path} ({model_path.stat().st_size / 1e6:.1f} MB, {len(graph.node)} nodes)")
    print(f"  inputs:  {shapes(inputs)}\n  outputs: {shapes(outputs)}\n  ops:     {' '.join(ops)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="reduced configurations for CI")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("build/models"))
    parser.add_argument("--only", choices=sorted(MODELS), action="append", help="export only these models")
    args = parser.parse_args()
    start = time.time()
    names = args.only or DEFAULT_MODELS
    for i, name in enumerate(names):
        export(name, args.small, args.out, f"[{i + 1}/{len(names)}]")
    print(f"export_models.py: {'small' if args.small else 'full'} models in {args.out} ({time.time() - start:.1f}s)")


if __name__ == "__main__":
    sys.exit(main())
