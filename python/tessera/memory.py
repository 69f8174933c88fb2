"""onnxruntime's Python descriptions of devices and memory (OrtDevice, OrtMemoryInfo, OrtArenaCfg and their enums)
and its process-wide shared allocators (create_and_register_allocator): a session created with the session config
entry "session.use_env_allocators" = "1" allocates from the shared allocator of each memory it uses, so several
sessions share one arena.
"""

from . import _tessera
from .capi._pybind_state import OrtDevice, OrtMemType  # noqa: F401 (onnxruntime exports both at the top level too)


class OrtAllocatorType:
    ORT_INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


class OrtMemoryInfoDeviceType:
    CPU = 0
    GPU = 1
    FPGA = 2
    NPU = 3


class OrtDeviceVendorId:
    """PCI vendor ids, as onnxruntime names them."""
    NONE = 0
    AMD = 0x1002
    APPLE = 0x106B
    NVIDIA = 0x10DE
    ARM = 0x13B5
    MICROSOFT = 0x1414
    HUAWEI = 0x19E5
    QUALCOMM = 0x5143
    INTEL = 0x8086


class OrtMemoryInfo:
    """A memory described the onnxruntime way: `OrtMemoryInfo(name, allocator_type, device_id, mem_type)` with name
    "Cpu", "Cuda", "CudaPinned", ... (or `create_v2` from a device type and vendor)."""

    def __init__(self, name, allocator_type, device_id, mem_type, *, device_mem_type=None, vendor_id=None,
                 alignment=0):
        self.name = name
        self.allocator_type = allocator_type
        self.device_id = device_id
        self.mem_type = mem_type
        pinned = name.lower().endswith("pinned")
        self.device_mem_type = device_mem_type if device_mem_type is not None else (
            _tessera.OrtDeviceMemoryType.HOST_ACCESSIBLE if pinned else _tessera.OrtDeviceMemoryType.DEFAULT)
        if vendor_id is None:
            vendor_id = OrtDeviceVendorId.NVIDIA if name.lower().startswith("cuda") else OrtDeviceVendorId.NONE
        self.device_vendor_id = vendor_id
        self.alignment = alignment
        self._device_type = None  # an OrtMemoryInfoDeviceType when made by create_v2

    @staticmethod
    def create_v2(name, device_type, vendor_id, device_id, mem_type, alignment, allocator_type):
        """onnxruntime's CreateMemoryInfo_V2: mem_type is an OrtDeviceMemoryType."""
        info = OrtMemoryInfo(name, allocator_type, device_id, OrtMemType.DEFAULT, device_mem_type=mem_type,
                             vendor_id=vendor_id, alignment=alignment)
        info._device_type = device_type
        return info

    def _device(self):
        """(Tessera device name, host-accessible) of this memory."""
        name = self.name.lower()
        host_accessible = name.endswith("pinned") or self.device_mem_type == _tessera.OrtDeviceMemoryType.HOST_ACCESSIBLE
        if name.endswith("pinned"):
            name = name[: -len("pinned")].rstrip("_")
        if self._device_type == OrtMemoryInfoDeviceType.CPU or name == "cpu":
            return "cpu", False
        if name in ("gpu", "cuda") or self._device_type == OrtMemoryInfoDeviceType.GPU:
            return "cuda", host_accessible
        return name, host_accessible

    def __repr__(self):
        return (f"OrtMemoryInfo(name={self.name!r}, allocator_type={self.allocator_type}, device_id={self.device_id}, "
                f"mem_type={self.mem_type})")


class OrtArenaCfg:
    """Arena settings: `OrtArenaCfg(max_mem, arena_extend_strategy, initial_chunk_size_bytes,
    max_dead_bytes_per_chunk)` or `OrtArenaCfg({"max_mem": ..., ...})`; -1 (or a missing key) keeps a default.
    arena_extend_strategy: 0 next power of two, 1 the size requested. initial_growth_chunk_size_bytes and
    max_power_of_two_extend_bytes are kept for onnxruntime's code; Tessera's arena grows by its own rule."""

    _KEYS = ("max_mem", "arena_extend_strategy", "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
             "initial_growth_chunk_size_bytes", "max_power_of_two_extend_bytes")

    def __init__(self, *args):
        if len(args) == 1 and isinstance(args[0], dict):
            unknown = set(args[0]) - set(self._KEYS)
            if unknown:
                raise ValueError(f"OrtArenaCfg: unknown keys {sorted(unknown)} (known: {', '.join(self._KEYS)})")
            self.settings = {k: int(v) for k, v in args[0].items()}
        elif len(args) == 4:
            self.settings = dict(zip(self._KEYS, (int(a) for a in args)))
        else:
            raise TypeError("OrtArenaCfg(max_mem, arena_extend_strategy, initial_chunk_size_bytes, "
                            "max_dead_bytes_per_chunk) or OrtArenaCfg(dict)")

    def __getattr__(self, key):
        if key in OrtArenaCfg._KEYS:
            return self.settings.get(key, -1)
        raise AttributeError(key)


def create_and_register_allocator(mem_info, arena_cfg=None):
    """A shared allocator for `mem_info`'s memory, used by sessions with "session.use_env_allocators" = "1"
    (replacing an earlier one for that memory). An arena unless mem_info asks for ORT_DEVICE_ALLOCATOR."""
    device, host_accessible = mem_info._device()
    use_arena = mem_info.allocator_type != OrtAllocatorType.ORT_DEVICE_ALLOCATOR
    settings = arena_cfg.settings if arena_cfg is not None else None
    return _tessera._create_shared_allocator(device, mem_info.device_id, host_accessible, use_arena, settings)


def create_and_register_allocator_v2(provider_type, mem_info, provider_options, arena_cfg=None):
    """create_and_register_allocator for the EP named `provider_type` (its options are not needed: the memory
    names the device)."""
    return create_and_register_allocator(mem_info, arena_cfg)
