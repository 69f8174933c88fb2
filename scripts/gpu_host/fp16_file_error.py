"""How far a float16 model file itself is from its PyTorch reference, with float16 arithmetic taken out.

    python3 scripts/gpu_host/fp16_file_error.py MODEL_fp16.onnx [...]

For each file (written by export_models.py, with MODEL_fp16.ref/ beside it), makes a float32 copy: float16
initializers, Constant values, graph input/output/value types and Cast targets become float32, values unchanged.
ONNX Runtime's CPU EP runs that copy on the reference inputs and the script prints the relative L2 error of
output 0 against MODEL_fp16.ref/output.npy. That is the error of the weights the file holds (rounding done by the
exporter, e.g. BatchNormalization folded in float16), the floor any runtime's float16 run of the file adds to.
"""
import pathlib
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, numpy_helper

F16, F32 = TensorProto.FLOAT16, TensorProto.FLOAT


def upcast_tensor(t):
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name)


def upcast_graph(graph):
    for i, t in enumerate(graph.initializer):
        if t.data_type == F16:
            graph.initializer[i].CopyFrom(upcast_tensor(t))
    for v in list(graph.input) + list(graph.output) + list(graph.value_info):
        if v.type.tensor_type.elem_type == F16:
            v.type.tensor_type.elem_type = F32
    for node in graph.node:
        for a in node.attribute:
            if node.op_type == "Cast" and a.name == "to" and a.i == F16:
                a.i = F32
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == F16:
                a.t.CopyFrom(upcast_tensor(a.t))
            if a.type == onnx.AttributeProto.GRAPH:
                upcast_graph(a.g)


def file_error(path):
    model = onnx.load(str(path))
    upcast_graph(model.graph)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = path.with_suffix(".ref")
    feeds = {}
    for i in session.get_inputs():
        a = np.load(ref / f"input_{i.name}.npy")
        feeds[i.name] = a.astype(np.float32) if a.dtype == np.float16 else a
    actual = session.run(None, feeds)[0].astype(np.float64)
    expected = np.load(ref / "output.npy").astype(np.float64)
    return np.linalg.norm(actual - expected) / np.linalg.norm(expected)


for arg in sys.argv[1:]:
    p = pathlib.Path(arg)
    print(f"{p.name}: the file's network in float32 vs its reference: relative L2 error {file_error(p):.3e}", flush=True)
