"""Operators built node by node with the onnx helper (PRelu,
InstanceNormalization and LayerNormalization, which import as several IR
nodes; ReduceSum, ReduceMax and ReduceMin), run through iosfarm.Session on the
cpu backend and compared with a numpy reference of the ONNX operator's
definition (rtol 1e-4, atol 1e-5)."""
import numpy as np
import pytest

import iosfarm


def run_model(tmp_path, node, x, initializers, opset=17):
    onnx = pytest.importorskip("onnx")
    numpy_helper = pytest.importorskip("onnx.numpy_helper")
    helper = onnx.helper
    graph = helper.make_graph(
        [node], "op", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(value, name) for name, value in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = tmp_path / "op.onnx"
    onnx.save(model, str(path))
    session = iosfarm.Session(path, schedule="sequential", backend="cpu")
    return session.run({"x": x})["y"]


def normalize(x, axes, scale, bias, epsilon):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    variance = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
    return ((x64 - mean) / np.sqrt(variance + epsilon) * scale + bias).astype(np.float32)


@pytest.mark.parametrize("slope_shape", [(8, 1, 1), (1,), (5,), (1, 8, 5, 5)])
def test_prelu(tmp_path, slope_shape):
    onnx = pytest.importorskip("onnx")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 8, 5, 5)).astype(np.float32)
    slope = rng.uniform(-0.5, 0.5, slope_shape).astype(np.float32)
    node = onnx.helper.make_node("PRelu", ["x", "slope"], ["y"], name="prelu")
    actual = run_model(tmp_path, node, x, {"slope": slope})
    np.testing.assert_allclose(actual, np.where(x < 0, slope * x, x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 8, 5, 5), (2, 4, 50), (1, 3, 4, 6, 5)])
def test_instance_normalization(tmp_path, shape):
    onnx = pytest.importorskip("onnx")
    rng = np.random.default_rng(1)
    x = (3 * rng.standard_normal(shape) + 1).astype(np.float32)
    scale = rng.standard_normal(shape[1]).astype(np.float32)
    bias = rng.standard_normal(shape[1]).astype(np.float32)
    node = onnx.helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"],
                                 name="norm", epsilon=1e-3)
    actual = run_model(tmp_path, node, x, {"scale": scale, "bias": bias})
    per_channel = (-1,) + (1,) * (len(shape) - 2)
    expected = normalize(x, tuple(range(2, len(shape))), scale.reshape(per_channel),
                         bias.reshape(per_channel), 1e-3)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis,with_bias", [(-1, True), (1, True), (2, False)])
def test_layer_normalization(tmp_path, axis, with_bias):
    onnx = pytest.importorskip("onnx")
    rng = np.random.default_rng(2)
    x = (2 * rng.standard_normal((2, 5, 6, 8)) - 1).astype(np.float32)
    first = axis % x.ndim
    scale = rng.standard_normal(x.shape[first:]).astype(np.float32)
    bias = rng.standard_normal(x.shape[first:]).astype(np.float32)
    initializers = {"scale": scale}
    inputs = ["x", "scale"]
    if with_bias:
        initializers["bias"] = bias
        inputs.append("bias")
    node = onnx.helper.make_node("LayerNormalization", inputs, ["y"], name="ln", axis=axis,
                                 epsilon=1e-5)
    actual = run_model(tmp_path, node, x, initializers)
    expected = normalize(x, tuple(range(first, x.ndim)), scale, bias if with_bias else 0.0, 1e-5)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op,axes,keepdims", [("ReduceSum", [1], 1), ("ReduceSum", [2, 3], 0),
                                              ("ReduceMax", [1], 1), ("ReduceMax", [-1], 0),
                                              ("ReduceMin", [2, 3], 1), ("ReduceMin", None, 0)])
def test_reduction(tmp_path, op, axes, keepdims):
    onnx = pytest.importorskip("onnx")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8, 5, 6)).astype(np.float32)
    initializers, inputs, attrs = {}, ["x"], {"keepdims": keepdims}
    if op == "ReduceSum" and axes is not None:  # an input from opset 13 on
        initializers["axes"] = np.array(axes, dtype=np.int64)
        inputs.append("axes")
    elif axes is not None:
        attrs["axes"] = axes
    node = onnx.helper.make_node(op, inputs, ["y"], name="reduce", **attrs)
    actual = run_model(tmp_path, node, x, initializers)
    numpy_op = {"ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMin": np.min}[op]
    expected = numpy_op(x.astype(np.float64), axis=None if axes is None else tuple(axes),
                        keepdims=bool(keepdims)).astype(np.float32)
    np.testing.assert_allclose(actual, np.asarray(expected).reshape(actual.shape), rtol=1e-4,
                               atol=1e-5)
