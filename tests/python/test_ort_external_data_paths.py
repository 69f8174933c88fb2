"""onnxruntime's onnxruntime_test_python_symlink_data.py and onnxruntime_test_python_whitelisted_data.py, mirrored
(onnxruntime's MIT-licensed tests: same layouts, calls and expected values, written here for Tessera).

- symlink_data (3 tests): Hugging Face's hub cache layout, snapshots/version/model.onnx and data.bin linking to
  blobs: data beside the file the model links to is read (also from a subfolder of it); data outside both the
  model's folder and the linked file's folder fails with "External data path validation failed" (Tessera's message
  says "external data path validation failed"; compared case-insensitively).
- whitelisted_data (2 tests): a model in model/ reading ../data/test_whitelist_data.bin (100 floats) loads only when
  SessionOptions.whitelisted_data_folders names data/. onnxruntime's testdata model is built here with the onnx
  package, the same layout and values.
"""

import os
import struct

import numpy as np
import pytest
from onnx import TensorProto, helper, save

import tessera as ort


def _external_constant_model(location, count):
    input_ = helper.make_tensor_value_info("input", TensorProto.FLOAT, [count])
    output = helper.make_tensor_value_info("output", TensorProto.FLOAT, [count])
    tensor = helper.make_tensor("external_data", TensorProto.FLOAT, [count], [float(i) for i in range(count)])
    tensor.data_location = TensorProto.EXTERNAL
    tensor.ClearField("float_data")
    tensor.ClearField("raw_data")
    for key, value in (("location", location), ("offset", "0"), ("length", str(count * 4))):
        entry = tensor.external_data.add()
        entry.key = key
        entry.value = value
    const_node = helper.make_node("Constant", [], ["const_out"], value=tensor)
    add_node = helper.make_node("Add", ["input", "const_out"], ["output"])
    graph = helper.make_graph([const_node, add_node], "test_graph", [input_], [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _write_floats(path, count):
    with open(path, "wb") as f:
        f.writelines(struct.pack("f", float(i)) for i in range(count))


def _hub_layout(root, model_dir, data_dir):
    """model.onnx and data.bin in snapshots/version, links to model_dir/guid1 and data_dir/guid2."""
    os.makedirs(model_dir, exist_ok=True)
    os.makedirs(data_dir, exist_ok=True)
    snapshots = os.path.join(root, "snapshots", "version")
    os.makedirs(snapshots)
    _write_floats(os.path.join(data_dir, "guid2"), 10)
    save(_external_constant_model("data.bin", 10), os.path.join(model_dir, "guid1"))
    model_link = os.path.join(snapshots, "model.onnx")
    try:
        os.symlink(os.path.join(model_dir, "guid1"), model_link)
        os.symlink(os.path.join(data_dir, "guid2"), os.path.join(snapshots, "data.bin"))
    except (OSError, NotImplementedError) as e:
        pytest.skip(f"symlink creation is not supported here: {e}")
    return model_link


def _expect_constant(sess, count):
    res = sess.run(["output"], {"input": np.zeros(count, dtype=np.float32)})
    np.testing.assert_allclose(res[0], np.arange(count, dtype=np.float32))


def test_symlink_model_and_data_under_same_directory(tmp_path):
    blobs = os.path.join(tmp_path, "blobs")
    model = _hub_layout(str(tmp_path), blobs, blobs)
    _expect_constant(ort.InferenceSession(model, providers=["CPUExecutionProvider"]), 10)


def test_symlink_with_data_in_model_sub_dir(tmp_path):
    blobs = os.path.join(tmp_path, "blobs")
    model = _hub_layout(str(tmp_path), blobs, os.path.join(blobs, "data"))
    _expect_constant(ort.InferenceSession(model, providers=["CPUExecutionProvider"]), 10)


def test_symlink_with_data_not_in_model_sub_dir(tmp_path):
    model = _hub_layout(str(tmp_path), os.path.join(tmp_path, "model"), os.path.join(tmp_path, "data"))
    with pytest.raises(Exception) as error:
        ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    assert "external data path validation failed" in str(error.value).lower()


def _whitelist_layout(root):
    model_dir = os.path.join(root, "whitelist", "model")
    data_dir = os.path.join(root, "whitelist", "data")
    os.makedirs(model_dir)
    os.makedirs(data_dir)
    _write_floats(os.path.join(data_dir, "test_whitelist_data.bin"), 100)
    model_path = os.path.join(model_dir, "test_whitelist_external_data.onnx")
    save(_external_constant_model("../data/test_whitelist_data.bin", 100), model_path)
    return model_path, data_dir


def test_whitelisted_data(tmp_path):
    model_path, data_dir = _whitelist_layout(str(tmp_path))
    so = ort.SessionOptions()
    so.whitelisted_data_folders = data_dir
    assert so.whitelisted_data_folders == data_dir
    sess = ort.InferenceSession(model_path, sess_options=so, providers=["CPUExecutionProvider"])
    _expect_constant(sess, 100)


def test_whitelisted_data_failure(tmp_path):
    model_path, _ = _whitelist_layout(str(tmp_path))
    with pytest.raises(Exception) as error:
        ort.InferenceSession(model_path, sess_options=ort.SessionOptions(), providers=["CPUExecutionProvider"])
    assert "external data path validation failed" in str(error.value).lower()


def test_whitelisted_data_folders_take_several(tmp_path):
    """Tessera: several folders, ';'-separated."""
    so = ort.SessionOptions()
    so.whitelisted_data_folders = "/a;/b"
    assert so.whitelisted_data_folders == "/a;/b"
