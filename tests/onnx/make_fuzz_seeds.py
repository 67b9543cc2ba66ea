#!/usr/bin/python3
"""Writes a seed corpus of small ONNX models for graph/onnx/onnx_import_fuzzer.

Usage: make_fuzz_seeds.py OUT_DIR

Seeds are tiny (a few KB) so that libFuzzer mutates structure, not weights:
  - tiny torch CNNs with the constructs torchvision exports use (conv/bn/relu,
    depthwise conv, SE blocks, channel shuffle, chunk, hardswish, avg-pool
    with padding, flatten + linear, softmax), exported at opsets 11, 13 and 17,
    with static and dynamic batch, with and without exporter constant folding;
  - hand-built onnx.helper graphs for shape arithmetic and less common ops.
Needs python3-onnx; the torch part is skipped when torch is missing.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def write(out_dir, name, model):
    path = os.path.join(out_dir, name + ".onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def helper_models(out_dir):
    def model(nodes, inputs, outputs, inits, opset, name):
        graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 7
        write(out_dir, name, m)

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])
    xd = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    f32 = lambda name, shape: numpy_helper.from_array(
        (np.arange(np.prod(shape)) % 7 * 0.1).astype(np.float32).reshape(shape), name)

    for opset in (11, 13):
        split_nodes = [helper.make_node("Split", ["x"] + (["s"] if opset >= 13 else []),
                                        ["a", "b"], axis=1,
                                        **({"split": [1, 3]} if opset < 13 else {})),
                       helper.make_node("Concat", ["b", "a"], ["y"], axis=1)]
        model(split_nodes, [x], [y], [i64("s", [1, 3])] if opset >= 13 else [], opset,
              f"split_opset{opset}")
        axes = {"axes": [2, 3]} if opset < 13 else {}
        sq_inputs = ["g"] + (["ax"] if opset >= 13 else [])
        model([helper.make_node("GlobalAveragePool", ["x"], ["g"]),
               helper.make_node("Squeeze", sq_inputs, ["s"], **axes),
               helper.make_node("Unsqueeze", ["s"] + (["ax"] if opset >= 13 else []), ["y"],
                                **axes)],
              [x], [y], [i64("ax", [2, 3])] if opset >= 13 else [], opset, f"squeeze_opset{opset}")

    # Shape arithmetic with a dynamic batch: Shape/Gather/Unsqueeze/Concat/Reshape.
    model([helper.make_node("Shape", ["x"], ["sh"]),
           helper.make_node("Gather", ["sh", "zero"], ["n"], axis=0),
           helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
           helper.make_node("Concat", ["n1", "rest"], ["target"], axis=0),
           helper.make_node("Reshape", ["x", "target"], ["r"]),
           helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3, 4]),
           helper.make_node("Flatten", ["t"], ["y"], axis=1)],
          [xd], [y], [i64("zero", 0), i64("ax0", [0]), i64("rest", [2, 2, 6, 6])], 13,
          "shape_chain_dynamic")

    # Slice with computed bounds, Range, ConstantOfShape, Where, Cast, Expand.
    model([helper.make_node("Shape", ["x"], ["sh"]),
           helper.make_node("Slice", ["sh", "one", "two"], ["c"]),
           helper.make_node("Div", ["c", "two"], ["half"]),
           helper.make_node("Range", ["zero", "four", "one_s"], ["rng"]),
           helper.make_node("Cast", ["rng"], ["rngf"], to=TensorProto.FLOAT),
           helper.make_node("ConstantOfShape", ["one"], ["ones"],
                            value=numpy_helper.from_array(np.array([1], dtype=np.int64))),
           helper.make_node("Equal", ["ones", "ones"], ["eq"]),
           helper.make_node("Where", ["eq", "half", "ones"], ["end"]),
           helper.make_node("Slice", ["x", "zero1", "end", "one"], ["s"]),
           helper.make_node("Expand", ["k", "kshape"], ["kk"]),
           helper.make_node("Mul", ["s", "kk"], ["m"]),
           helper.make_node("Pad", ["m", "pads"], ["y"], mode="edge")],
          [x], [y], [i64("one", [1]), i64("two", [2]), i64("zero", 0), i64("four", 4),
                     i64("one_s", 1), i64("zero1", [0]), f32("k", [1, 1, 1]),
                     i64("kshape", [1, 6, 6]), i64("pads", [0, 0, 1, 1, 0, 0, 1, 1])],
          13, "slice_range_where")

    # Gemm/MatMul/Softmax/ReduceMean/Clip/HardSigmoid on a tiny head.
    v = helper.make_tensor_value_info("v", TensorProto.FLOAT, [2, 8])
    model([helper.make_node("Gemm", ["v", "w", "bias"], ["g"], transB=1, alpha=0.5),
           helper.make_node("Clip", ["g", "lo", "hi"], ["c"]),
           helper.make_node("HardSigmoid", ["c"], ["h"], alpha=0.3),
           helper.make_node("MatMul", ["h", "m"], ["mm"]),
           helper.make_node("ReduceMean", ["mm"], ["r"], axes=[1], keepdims=1),
           helper.make_node("Softmax", ["mm"], ["sm"], axis=-1),
           helper.make_node("Sub", ["sm", "r"], ["y"])],
          [v], [y], [f32("w", [5, 8]), f32("bias", [5]), f32("m", [5, 3]),
                     numpy_helper.from_array(np.array(0, dtype=np.float32), "lo"),
                     numpy_helper.from_array(np.array(6, dtype=np.float32), "hi")],
          13, "gemm_head")

    # fp16 and double weights, auto_pad, pooling variants, BN.
    w16 = numpy_helper.from_array(
        (np.arange(4 * 4 * 3 * 3) % 5 * 0.1).astype(np.float16).reshape(4, 4, 3, 3), "w16")
    b64 = numpy_helper.from_array(np.arange(4).astype(np.float64), "b64")
    bn = [f32(n, [4]) for n in ("s", "bb", "mu")] + [
        numpy_helper.from_array(np.ones(4, dtype=np.float32), "var")]
    model([helper.make_node("Conv", ["x", "w16", "b64"], ["c"], auto_pad="SAME_UPPER",
                            strides=[2, 2]),
           helper.make_node("BatchNormalization", ["c", "s", "bb", "mu", "var"], ["b"]),
           helper.make_node("MaxPool", ["b"], ["p"], kernel_shape=[2, 2], ceil_mode=1),
           helper.make_node("AveragePool", ["p"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                            count_include_pad=1),
           helper.make_node("GlobalMaxPool", ["a"], ["y"])],
          [x], [y], [w16, b64] + bn, 17, "conv_fp16_pools")


def torch_models(out_dir):
    try:
        import torch
        from torch import nn
    except ImportError as error:
        print(f"torch not available, skipping torch seeds: {error}", file=sys.stderr)
        return

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8),
                                      nn.ReLU6())
            self.dw = nn.Conv2d(4, 4, 3, 1, 1, groups=4)
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(8, 2, 1), nn.ReLU(),
                                    nn.Conv2d(2, 8, 1), nn.Hardsigmoid())
            self.pool = nn.AvgPool2d(3, 1, 1)
            self.fc = nn.Linear(8, 5)
            self.drop = nn.Dropout(0.2)

        def forward(self, x):
            x = self.stem(x)
            a, b = x.chunk(2, dim=1)
            b = nn.functional.hardswish(self.dw(b))
            x = torch.cat([a, b], 1)
            n, c, h, w = x.size()
            x = x.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, -1, h, w)
            x = x * self.se(x)
            x = self.pool(torch.sigmoid(x) + torch.tanh(x))
            x = nn.functional.max_pool2d(x, 2, ceil_mode=True)
            x = x.mean([2, 3])
            return torch.softmax(self.fc(self.drop(torch.flatten(x, 1))), dim=1)

    torch.manual_seed(0)
    net = Tiny().eval()
    example = torch.randn(1, 3, 16, 16)
    for opset in (11, 13, 17):
        for folding in (True, False):
            for dynamic in (False, True):
                name = f"tiny_opset{opset}{'_fold' if folding else ''}{'_dyn' if dynamic else ''}"
                path = os.path.join(out_dir, name + ".onnx")
                kwargs = {}
                if dynamic:
                    kwargs["dynamic_axes"] = {"input": {0: "batch"}, "output": {0: "batch"}}
                with torch.no_grad():
                    torch.onnx.export(net, example, path, opset_version=opset,
                                      input_names=["input"], output_names=["output"],
                                      do_constant_folding=folding, **kwargs)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    helper_models(out_dir)
    torch_models(out_dir)
    for name in sorted(os.listdir(out_dir)):
        onnx.load(os.path.join(out_dir, name))  # parses
    print(f"wrote {len(os.listdir(out_dir))} seeds to {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
