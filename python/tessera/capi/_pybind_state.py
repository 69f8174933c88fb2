"""The names of onnxruntime.capi._pybind_state that scripts and onnxruntime's own Python tests import.

OrtValue and SessionIOBinding are Tessera's native classes (SessionIOBinding takes a session's native object,
`InferenceSession._sess`, as onnxruntime's does); OrtDevice describes a device the onnxruntime way.
"""

from .._tessera import (  # noqa: F401
    Fail,
    InvalidArgument,
    OrtSyncStream,
    OrtValue,
    RunOptions,
    SessionOptions,
    copy_tensors,
    get_ep_devices,
)
from .._tessera import _IOBinding as SessionIOBinding  # noqa: F401
from .._tessera import OrtDeviceMemoryType as OrtMemType  # noqa: F401


class OrtDevice:
    """`OrtDevice(device_type, memory_type, device_id)`: device_type OrtDevice.cpu() / cuda() / fpga() / npu(),
    memory_type OrtDevice.default_memory() (or 1, host-accessible memory of the device), device_id its ordinal."""

    _CPU, _GPU, _FPGA, _NPU = 0, 1, 2, 3
    _NAMES = {_CPU: "cpu", _GPU: "cuda", _NPU: "npu"}

    def __init__(self, device_type, memory_type, device_id, vendor_id=0):
        self._type, self._memory, self._id, self._vendor = int(device_type), int(memory_type), int(device_id), vendor_id

    @staticmethod
    def cpu():
        return OrtDevice._CPU

    @staticmethod
    def cuda():
        return OrtDevice._GPU

    @staticmethod
    def fpga():
        return OrtDevice._FPGA

    @staticmethod
    def npu():
        return OrtDevice._NPU

    @staticmethod
    def default_memory():
        return 0

    def device_id(self):
        return self._id

    def device_type(self):
        return self._type

    def device_mem_type(self):
        return self._memory

    def device_vendor_id(self):
        return self._vendor

    def device_name(self):
        """The device name OrtValue and IOBinding take: "cpu", "cuda", or "cuda_pinned" for host-accessible memory."""
        name = self._NAMES.get(self._type, "cpu")
        return name + "_pinned" if self._memory == 1 and name != "cpu" else name

    def __eq__(self, other):
        return isinstance(other, OrtDevice) and (self._type, self._memory, self._id) == (
            other._type, other._memory, other._id)

    def __hash__(self):
        return hash((self._type, self._memory, self._id))

    def __repr__(self):
        return f"OrtDevice(type={self._type}, memory={self._memory}, id={self._id})"
