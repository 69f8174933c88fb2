"""onnxruntime's onnxruntime_test_python_cudagraph.py, mirrored (the CUDA cases run on the GPU host, skipped here).

- test_ort_value_update_in_place: OrtValue.update_inplace on the CPU and on CUDA.
- test_select_ep_to_run_cuda_graph: matmul_2.onnx (built here: Y = X . [[1], [2]]) with enable_cuda_graph, IO
  binding, a capture run, replays, an input updated in place before a replay; then graph annotation: three bound
  buffer pairs under gpu_graph_id 1..3, each captured once and replayed after its input changed in place (the replay
  loop binds each pair again: onnxruntime's replays ignore what is bound, Tessera's runs use the binding).
- test_arena_with_cuda_graph: onnxruntime's squeezenet testdata model is not here; a convolutional model of the same
  shape of use (batch 16, 3x224x224 in, a softmax over 1000 classes out) built here, with enable_cuda_graph and
  arena_extend_strategy kSameAsRequested, all inputs and outputs bound through CudaGraphHelper.
"""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera as onnxrt

HAS_CUDA = "CUDAExecutionProvider" in onnxrt.get_available_providers()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs the CUDA EP (GPU host)")


def _model(nodes, inputs, outputs, initializers):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def matmul_2():
    w = numpy_helper.from_array(np.array([[1.0], [2.0]], np.float32), "W")
    return _model([helper.make_node("MatMul", ["X", "W"], ["Y"])],
                  [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", 2])],
                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["n", 1])], [w])


def conv_classifier():
    """data_0 [N, 3, 224, 224] -> conv 7x7/4 -> relu -> conv 1x1 to 1000 -> global average -> softmax: softmaxout_1."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((32, 3, 7, 7)).astype(np.float32) * 0.01, "W1")
    w2 = numpy_helper.from_array(rng.standard_normal((1000, 32, 1, 1)).astype(np.float32) * 0.05, "W2")
    return _model([helper.make_node("Conv", ["data_0", "W1"], ["c1"], strides=[4, 4], pads=[3, 3, 3, 3]),
                   helper.make_node("Relu", ["c1"], ["r1"]),
                   helper.make_node("Conv", ["r1", "W2"], ["c2"]),
                   helper.make_node("GlobalAveragePool", ["c2"], ["pooled"]),
                   helper.make_node("Softmax", ["pooled"], ["softmaxout_1"], axis=1)],
                  [helper.make_tensor_value_info("data_0", TensorProto.FLOAT, ["N", 3, 224, 224])],
                  [helper.make_tensor_value_info("softmaxout_1", TensorProto.FLOAT, ["N", 1000, 1, 1])], [w1, w2])


class CudaGraphHelper:
    """onnxruntime's helper: an OrtValue on the GPU per input and output, bound once."""

    def __init__(self, ort_session, input_and_output_shape, device_id=0):
        self.input_names = [i.name for i in ort_session.get_inputs()]
        self.output_names = [o.name for o in ort_session.get_outputs()]
        types = {"tensor(int64)": np.longlong, "tensor(int32)": np.intc, "tensor(float)": np.float32,
                 "tensor(float16)": np.float16}
        io_type = {v.name: types[v.type] for v in list(ort_session.get_inputs()) + list(ort_session.get_outputs())}
        self.io_binding = ort_session.io_binding()
        self.io_ort_value = {}
        for name in self.input_names + self.output_names:
            value = onnxrt.OrtValue.ortvalue_from_shape_and_type(input_and_output_shape[name], io_type[name], "cuda",
                                                                 device_id)
            self.io_ort_value[name] = value
            if name in self.input_names:
                self.io_binding.bind_ortvalue_input(name, value)
            else:
                self.io_binding.bind_ortvalue_output(name, value)

    def update_inputs(self, inputs):
        for name in self.input_names:
            self.io_ort_value[name].update_inplace(inputs[name])

    def get_output(self, name):
        return self.io_ort_value[name].numpy()


def test_ort_value_update_in_place():
    x0 = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
    x1 = np.array([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]], dtype=np.float32)
    cpu = onnxrt.OrtValue.ortvalue_from_numpy(x0)
    np.testing.assert_allclose(x0, cpu.numpy())
    cpu.update_inplace(x1)
    np.testing.assert_allclose(x1, cpu.numpy())
    if HAS_CUDA:
        gpu = onnxrt.OrtValue.ortvalue_from_numpy(x0, "cuda", 0)
        np.testing.assert_allclose(x0, gpu.numpy())
        gpu.update_inplace(x1)
        np.testing.assert_allclose(x1, gpu.numpy())


SIZE = 1280


@requires_cuda
def test_select_ep_to_run_cuda_graph():
    providers = [("CUDAExecutionProvider", {"enable_cuda_graph": True})]
    x = onnxrt.OrtValue.ortvalue_from_numpy(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]] * SIZE, np.float32), "cuda", 0)
    y = onnxrt.OrtValue.ortvalue_from_numpy(np.array([[0.0], [0.0], [0.0]] * SIZE, np.float32), "cuda", 0)
    session = onnxrt.InferenceSession(matmul_2(), providers=providers)
    binding = session.io_binding()
    binding.bind_ortvalue_input("X", x)
    binding.bind_ortvalue_output("Y", y)
    ro = onnxrt.RunOptions()
    session.run_with_iobinding(binding, ro)  # capture
    expected = np.array([[5.0], [11.0], [17.0]] * SIZE, np.float32)
    np.testing.assert_allclose(expected, y.numpy(), rtol=1e-5, atol=1e-5)
    session.run_with_iobinding(binding, ro)  # replay
    np.testing.assert_allclose(expected, y.numpy(), rtol=1e-5, atol=1e-5)
    x.update_inplace(np.array([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]] * SIZE, np.float32))
    session.run_with_iobinding(binding, ro)
    np.testing.assert_allclose(np.array([[50.0], [110.0], [170.0]] * SIZE, np.float32), y.numpy(), rtol=1e-5,
                               atol=1e-5)

    # Graph annotation: one captured graph per gpu_graph_id, each with its own buffers.
    x_base, y_base = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [[0.0], [0.0], [0.0]]
    expected_base, x_times_10, expected_times_10 = [[5.0], [11.0], [17.0]], [[10.0, 20.0], [30.0, 40.0],
                                                                            [50.0, 60.0]], [[50.0], [110.0], [170.0]]
    xs = [onnxrt.OrtValue.ortvalue_from_numpy(np.array(x_base[: i + 1] * SIZE, np.float32), "cuda", 0) for i in range(3)]
    ys = [onnxrt.OrtValue.ortvalue_from_numpy(np.array(y_base[: i + 1] * SIZE, np.float32), "cuda", 0) for i in range(3)]
    session = onnxrt.InferenceSession(matmul_2(), providers=providers)
    binding = session.io_binding()
    ro = onnxrt.RunOptions()
    for i in range(3):
        binding.bind_ortvalue_input("X", xs[i])
        binding.bind_ortvalue_output("Y", ys[i])
        ro.add_run_config_entry("gpu_graph_id", str(i + 1))
        session.run_with_iobinding(binding, ro)
        np.testing.assert_allclose(np.array(expected_base[: i + 1] * SIZE, np.float32), ys[i].numpy(), rtol=1e-5,
                                   atol=1e-5)
    for i in range(3):
        xs[i].update_inplace(np.array(x_times_10[: i + 1] * SIZE, np.float32))
        binding.bind_ortvalue_input("X", xs[i])
        binding.bind_ortvalue_output("Y", ys[i])
        ro.add_run_config_entry("gpu_graph_id", str(i + 1))
        session.run_with_iobinding(binding, ro)
        np.testing.assert_allclose(np.array(expected_times_10[: i + 1] * SIZE, np.float32), ys[i].numpy(),
                                   rtol=1e-5, atol=1e-5)


@requires_cuda
def test_arena_with_cuda_graph():
    providers = [("CUDAExecutionProvider", {"enable_cuda_graph": True, "arena_extend_strategy": "kSameAsRequested"})]
    shapes = {"data_0": [16, 3, 224, 224], "softmaxout_1": [16, 1000, 1, 1]}
    options = onnxrt.SessionOptions()
    options.enable_mem_pattern = False
    session = onnxrt.InferenceSession(conv_classifier(), options, providers=providers)
    helper_ = CudaGraphHelper(session, shapes)
    np.random.seed(0)
    inputs = {"data_0": np.random.randint(0, 256, size=shapes["data_0"]).astype(np.float32)}
    helper_.update_inputs(inputs)
    session.run_with_iobinding(helper_.io_binding)  # capture
    expected = helper_.get_output("softmaxout_1")
    helper_.update_inputs(inputs)
    session.run_with_iobinding(helper_.io_binding)  # replay
    np.testing.assert_allclose(expected, helper_.get_output("softmaxout_1"), rtol=1e-2, atol=1e-2)
    # Beyond onnxruntime's check: the replayed result is the CPU EP's (within TF32's rounding: the CUDA EP's
    # convolutions use TF32 by default, use_tf32).
    reference = onnxrt.InferenceSession(conv_classifier(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(reference.run(None, inputs)[0], helper_.get_output("softmaxout_1"), rtol=5e-3,
                               atol=1e-5)
