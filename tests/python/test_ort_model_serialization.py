"""onnxruntime's test_model_serialization cases (onnxruntime_test_python.py, MIT License, Microsoft), mirrored: the
same SessionOptions, config entries and file checks, in a temporary working folder. Their testdata models are built
here with the onnx package: mul_1 (Y = X * W), an mnist-shaped convolutional classifier (initializers above 100
bytes), and model_with_orig_ext_data (a model whose weight is external data of its own).

- test_model_serialization: optimized_model_filepath writes the optimized model.
- test_model_serialization_with_external_initializers(_to_directory): initializers of at least
  session.optimized_model_external_initializers_min_size_in_bytes go to
  session.optimized_model_external_initializers_file_name, beside the model.
- test_model_serialization_with_original_external_initializers_to_directory / _to_current_directory: a model with
  external data of its own, written with its initializers external again; the second writes from the first's output
  and loads without it.
Tessera writes its own fused ops (domain ai.tessera) at the default optimization level, as onnxruntime writes its
contrib ops; the files load again in Tessera (checked here by running them).
"""

import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper, save

import tessera as onnxrt


def _mul_1(path):
    w = helper.make_tensor("W", TensorProto.FLOAT, [3, 2], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    graph = helper.make_graph([helper.make_node("Mul", ["X", "W"], ["Y"])], "mul_1",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 2])], [w])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _mnist(path):
    """An mnist-shaped classifier: Conv-Relu-MaxPool twice, Reshape, MatMul + Add; input 1x1x28x28."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name)
             for name, shape in (("w1", (8, 1, 5, 5)), ("b1", (8,)), ("w2", (16, 8, 5, 5)), ("b2", (16,)),
                                 ("w3", (256, 10)), ("b3", (10,)))]
    inits.append(numpy_helper.from_array(np.array([1, 256], dtype=np.int64), "shape"))
    nodes = [
        helper.make_node("Conv", ["Input3", "w1", "b1"], ["c1"], pads=[2, 2, 2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[2, 2, 2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[3, 3], strides=[3, 3]),
        helper.make_node("Reshape", ["p2", "shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "w3"], ["m"]),
        helper.make_node("Add", ["m", "b3"], ["Plus214_Output_0"]),
    ]
    graph = helper.make_graph(nodes, "mnist", [helper.make_tensor_value_info("Input3", TensorProto.FLOAT, [1, 1, 28, 28])],
                              [helper.make_tensor_value_info("Plus214_Output_0", TensorProto.FLOAT, [1, 10])], inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _model_with_orig_ext_data(path):
    """Y = X + W with W (4 x 4 floats, 64 bytes) stored in model_with_orig_ext_data.bin beside the model."""
    w = numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), "W")
    graph = helper.make_graph([helper.make_node("Add", ["X", "W"], ["Y"])], "orig_ext",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
         location="model_with_orig_ext_data.bin", size_threshold=0)


@pytest.fixture
def testdata(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.makedirs("testdata")
    _mul_1("testdata/mul_1.onnx")
    _mnist("testdata/mnist.onnx")
    _model_with_orig_ext_data("testdata/model_with_orig_ext_data.onnx")
    return lambda name: os.path.join("testdata", name)


def _same_outputs(original, written, feeds):
    want = onnxrt.InferenceSession(original).run(None, feeds)
    got = onnxrt.InferenceSession(written).run(None, feeds)
    for a, b in zip(want, got):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


MNIST_FEEDS = {"Input3": np.random.default_rng(1).standard_normal((1, 1, 28, 28)).astype(np.float32)}
ADD_FEEDS = {"X": np.ones((4, 4), dtype=np.float32)}


def test_model_serialization(testdata):
    so = onnxrt.SessionOptions()
    so.log_severity_level = 1
    so.logid = "TestModelSerialization"
    so.optimized_model_filepath = "./PythonApiTestOptimizedModel.onnx"
    onnxrt.InferenceSession(testdata("mul_1.onnx"), sess_options=so)
    assert os.path.isfile(so.optimized_model_filepath)
    _same_outputs(testdata("mul_1.onnx"), so.optimized_model_filepath,
                  {"X": np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)})
    os.remove(so.optimized_model_filepath)


def test_model_serialization_with_external_initializers(testdata):
    so = onnxrt.SessionOptions()
    so.log_severity_level = 1
    so.logid = "TestModelSerializationWithExternalInitializers"
    so.optimized_model_filepath = "./model_with_external_initializers.onnx"
    external_initializers_file = "external_initializers.bin"
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", external_initializers_file)
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "100")
    onnxrt.InferenceSession(testdata("mnist.onnx"), sess_options=so)
    assert os.path.isfile(so.optimized_model_filepath)
    assert os.path.isfile(external_initializers_file)
    _same_outputs(testdata("mnist.onnx"), so.optimized_model_filepath, MNIST_FEEDS)
    os.remove(so.optimized_model_filepath)
    os.remove(external_initializers_file)


def test_model_serialization_with_external_initializers_to_directory(testdata):
    so = onnxrt.SessionOptions()
    so.log_severity_level = 1
    so.logid = "TestModelSerializationWithExternalInitializersToDirectory"
    directory = "./testdata/"
    so.optimized_model_filepath = os.path.join(directory, "model_with_external_initializers_in_dir.onnx")
    external_initializers_file = "external_initializers_in_dir.bin"
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", external_initializers_file)
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "100")
    onnxrt.InferenceSession(testdata("mnist.onnx"), sess_options=so)
    assert os.path.isfile(so.optimized_model_filepath)
    assert os.path.isfile(os.path.join(directory, external_initializers_file))
    _same_outputs(testdata("mnist.onnx"), so.optimized_model_filepath, MNIST_FEEDS)
    os.remove(so.optimized_model_filepath)
    os.remove(os.path.join(directory, external_initializers_file))


def test_model_serialization_with_original_external_initializers_to_directory(testdata):
    so = onnxrt.SessionOptions()
    so.log_severity_level = 1
    so.logid = "TestModelSerializationWithOriginalExternalInitializersToDirectory"
    directory = "./testdata/"
    so.optimized_model_filepath = os.path.join(directory, "model_opt_with_ext_data.onnx")
    external_initializers_file = "model_opt_with_ext_data.bin"
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", external_initializers_file)
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "20")
    onnxrt.InferenceSession(testdata("model_with_orig_ext_data.onnx"), sess_options=so)
    assert os.path.isfile(so.optimized_model_filepath)
    assert os.path.isfile(os.path.join(directory, external_initializers_file))
    _same_outputs(testdata("model_with_orig_ext_data.onnx"), so.optimized_model_filepath, ADD_FEEDS)
    os.remove(so.optimized_model_filepath)
    os.remove(os.path.join(directory, external_initializers_file))


def test_model_serialization_with_original_external_initializers_to_current_directory(testdata):
    optimized_model_filepath = "model_opt_with_ext_data_1.onnx"
    external_initializers_file = "model_opt_with_ext_data_1.bin"
    optimized_model_filepath_2 = "model_opt_with_ext_data_2.onnx"
    external_initializers_file_2 = "model_opt_with_ext_data_2.bin"

    so = onnxrt.SessionOptions()
    so.log_severity_level = 1
    so.logid = "TestModelSerializationWithOriginalExternalInitializersToCurrentDirectory"
    so.optimized_model_filepath = optimized_model_filepath
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", external_initializers_file)
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "100")
    session1 = onnxrt.InferenceSession(testdata("model_with_orig_ext_data.onnx"), sess_options=so)
    del session1
    assert os.path.isfile(optimized_model_filepath)

    so2 = onnxrt.SessionOptions()
    so2.log_severity_level = 1
    so2.logid = "TestModelSerializationWithExternalInitializersInCurrentDirectory"
    so2.optimized_model_filepath = optimized_model_filepath_2
    so2.add_session_config_entry("session.optimized_model_external_initializers_file_name", external_initializers_file_2)
    so2.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "10")
    # The first optimized model (its external data in the current folder) loads, and writes the second.
    session2 = onnxrt.InferenceSession(optimized_model_filepath, sess_options=so2)
    del session2
    assert os.path.isfile(optimized_model_filepath_2)
    assert os.path.isfile(external_initializers_file_2)

    # The second loads without the first.
    os.remove(optimized_model_filepath)
    session3 = onnxrt.InferenceSession(optimized_model_filepath_2, sess_options=onnxrt.SessionOptions())
    np.testing.assert_allclose(session3.run(None, ADD_FEEDS)[0], np.ones((4, 4), np.float32) + np.arange(16).reshape(4, 4))
    del session3
    os.remove(optimized_model_filepath_2)
    os.remove(external_initializers_file_2)
