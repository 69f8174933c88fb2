"""The names of onnxruntime.capi._pybind_state that scripts and onnxruntime's own Python tests import.

OrtValue is Tessera's native class; SessionIOBinding is the native binding (it takes a session's native object,
`InferenceSession._sess`, as onnxruntime's does) that also takes an OrtDevice where onnxruntime's does
(`bind_input(name, device, element_type, shape, buffer_ptr)`, `bind_output(name, device)`) and returns its outputs
as an OrtValueVector; the native session runs it with `run_with_iobinding(binding, run_options)`. OrtDevice
describes a device the onnxruntime way.
"""

from .._tessera import (  # noqa: F401
    Fail,
    InvalidArgument,
    OrtExternalInitializerInfo,
    OrtSyncStream,
    OrtValue,
    RunOptions,
    SessionOptions,
    copy_tensors,
    get_ep_devices,
    is_dlpack_uint8_tensor,
)
from .. import _tessera


class OrtMemType:
    """Where an EP's kernel argument lives: CPU_INPUT / CPU_OUTPUT (host memory a device EP reads or writes) or
    DEFAULT (the device's own), as onnxruntime's OrtMemType (`tessera.OrtMemType` is this class)."""
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


class OrtDevice:
    """`OrtDevice(device_type, memory_type, device_id)`: device_type OrtDevice.cpu() / cuda() / fpga() / npu(),
    memory_type OrtDevice.default_memory() (or 1, host-accessible memory of the device), device_id its ordinal."""

    _CPU, _GPU, _FPGA, _NPU = 0, 1, 2, 3
    _TESTING = 0xFFFE  # Tessera's simulated device (the testing EP plugin)
    _NAMES = {_CPU: "cpu", _GPU: "cuda", _NPU: "npu", _TESTING: "testing"}

    def __init__(self, device_type, memory_type, device_id, vendor_id=0):
        self._type, self._memory, self._id, self._vendor = int(device_type), int(memory_type), int(device_id), vendor_id

    @staticmethod
    def make(device_name, device_id):
        """onnxruntime's OrtDevice.make("cpu" | "cuda" | "testing" | other, device_id); a device name Tessera does not
        know (e.g. "webgpu") gives a GPU device with no vendor."""
        name = device_name.lower()
        device_type = {"cpu": OrtDevice._CPU, "cuda": OrtDevice._GPU, "gpu": OrtDevice._GPU,
                       "testing": OrtDevice._TESTING}.get(name, OrtDevice._GPU)
        vendor = 0x10DE if name in ("cuda", "gpu") else 0  # NVIDIA's PCI vendor id
        return OrtDevice(device_type, 0, device_id, vendor)

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
    def testing():
        """Tessera's simulated device (libtessera_testing_ep.so), for tests that run without a GPU."""
        return OrtDevice._TESTING

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


class OrtValueVector(list):
    """The outputs of an IOBinding, as onnxruntime's SessionIOBinding.get_outputs returns them."""


class SessionIOBinding(_tessera._IOBinding):
    """onnxruntime's native IOBinding: devices may be given as OrtDevice objects."""

    def bind_input(self, name, device, *args):
        if isinstance(device, OrtDevice):  # (name, device, element_type, shape, buffer_ptr)
            element_type, shape, buffer_ptr = args
            return super().bind_input(name, device.device_name(), device.device_id(), element_type, shape, buffer_ptr)
        return super().bind_input(name, device, *args)

    def bind_output(self, name, device="cpu", *args):
        if isinstance(device, OrtDevice):  # (name, device[, element_type, shape, buffer_ptr])
            return super().bind_output(name, device.device_name(), device.device_id(), *args)
        return super().bind_output(name, device, *args)

    def get_outputs(self):
        return OrtValueVector(super().get_outputs())


def _run_with_iobinding(native_session, binding, run_options=None):
    """onnxruntime's `InferenceSession._sess.run_with_iobinding(binding, run_options)`."""
    binding.run(run_options)


_tessera._Session.run_with_iobinding = _run_with_iobinding

_native_run_with_ort_values = _tessera._Session.run_with_ort_values


def _run_with_ort_values(native_session, feeds, output_names, run_options=None):
    """onnxruntime's `InferenceSession._sess.run_with_ort_values(feeds, output_names, run_options)`: an
    OrtValueVector of the outputs."""
    return OrtValueVector(_native_run_with_ort_values(native_session, feeds, list(output_names or []), run_options))


_tessera._Session.run_with_ort_values = _run_with_ort_values
