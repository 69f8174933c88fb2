"""tessera::Error codes become Python exceptions carrying the runtime's message."""

import numpy as np
import pytest

import onnx_models
import tessera as ort


def test_exception_hierarchy():
    assert issubclass(ort.TesseraError, RuntimeError)
    for cls in (ort.InvalidArgument, ort.InvalidModel, ort.NotImplemented, ort.OutOfMemory, ort.RuntimeException,
                ort.NoSuchFile):
        assert issubclass(cls, ort.Fail) and issubclass(cls, ort.TesseraError)
    assert issubclass(ort.InvalidArgument, ValueError)
    assert issubclass(ort.Terminated, ort.RuntimeException)
    assert ort.InvalidGraph is ort.InvalidModel and ort.InvalidProtobuf is ort.InvalidModel


def test_invalid_model_bytes():
    with pytest.raises(ort.InvalidGraph, match="not a valid ONNX model"):
        ort.InferenceSession(b"this is not a model")


def test_missing_model_file(tmp_path):
    with pytest.raises(ort.NoSuchFile, match="missing.onnx"):
        ort.InferenceSession(str(tmp_path / "missing.onnx"))


def test_unsupported_operator_names_op_and_node():
    with pytest.raises(ort.NotImplemented, match=r"FrobnicateTensor.*com\.example.*'mystery'"):
        ort.InferenceSession(onnx_models.unknown_op())


def test_bad_feeds_raise_invalid_argument_naming_the_input():
    session = ort.InferenceSession(onnx_models.binary())
    a = np.ones((2, 4), np.float32)
    with pytest.raises(ort.InvalidArgument, match="no input 'Z'"):
        session.run(None, {"A": a, "B": a, "Z": a})
    with pytest.raises(ValueError, match=r"Required inputs \(\['B'\]\) are missing from input feed \(\['A'\]\)"):
        session.run(None, {"A": a})
    with pytest.raises(ort.InvalidArgument, match="input 'B' expects element type float, got .*int32"):
        session.run(None, {"A": a, "B": a.astype(np.int32)})
    with pytest.raises(ort.InvalidArgument, match="input 'B' expects shape"):
        session.run(None, {"A": a, "B": np.ones((2, 5), np.float32)})
    with pytest.raises(ort.InvalidArgument, match="no output 'nope'"):
        session.run(["nope"], {"A": a, "B": a})
    # The session is still usable after failed runs.
    np.testing.assert_array_equal(session.run(None, {"A": a, "B": a})[0], 2 * a)


def test_kernel_error_is_reported_with_node():
    session = ort.InferenceSession(onnx_models.binary(shape=("n", "m")))
    with pytest.raises(ort.TesseraError, match="binary"):
        session.run(None, {"A": np.ones((2, 3), np.float32), "B": np.ones((4, 5), np.float32)})


def test_out_of_memory_on_the_testing_device():
    if "TestingExecutionProvider" not in ort.get_available_providers():
        pytest.skip("testing EP library not registered (set TESSERA_TESTING_EP_PATH)")
    session = ort.InferenceSession(onnx_models.add_relu(shape=(64, 64)),
                                   providers=[("TestingExecutionProvider", {"fail_allocations_after": 0})])
    a = np.ones((64, 64), np.float32)
    with pytest.raises(ort.OutOfMemory, match="fail_allocations_after"):
        session.run(None, {"A": a, "B": a})


def test_unknown_provider_option_is_rejected():
    if "TestingExecutionProvider" not in ort.get_available_providers():
        pytest.skip("testing EP library not registered (set TESSERA_TESTING_EP_PATH)")
    with pytest.raises(ort.InvalidArgument, match="unknown provider option 'bogus'"):
        ort.InferenceSession(onnx_models.binary(), providers=[("TestingExecutionProvider", {"bogus": 1})])


def test_unsupported_numpy_dtype():
    session = ort.InferenceSession(onnx_models.binary())
    with pytest.raises(ort.InvalidArgument, match="has no ONNX element type"):
        session.run(None, {"A": np.zeros((1, 4), dtype="datetime64[s]"), "B": np.ones((1, 4), np.float32)})
