"""onnxruntime's ``preload_dlls``: load the CUDA and cuDNN libraries the CUDA EP plugin needs before it loads.

libtessera_cuda.so needs cuBLAS / cuBLASLt (CUDA's major version) and cuDNN 9 at run time. Where they come from
NVIDIA's Python wheels (``nvidia-cudnn-cu13``, ``nvidia-cublas``, the CUDA 13 ``nvidia/cu13`` tree, or PyTorch's
dependencies) instead of the system's library path, the dynamic loader does not find them and the CUDA EP is
skipped at ``import tessera``. ``preload_dlls()`` loads them by path with RTLD_GLOBAL -- the plugin's dependencies
then resolve to the loaded copies by their sonames -- and registers the EP libraries that failed before.

    import tessera as ort
    ort.preload_dlls()                  # NVIDIA site-packages first, then the loader's default paths
    ort.preload_dlls(directory="")      # NVIDIA site-packages only
    ort.preload_dlls(directory="/opt/cudnn/lib")   # one folder (each library by its file name)
"""

import ctypes
import os
import platform
import site
import sys
import warnings

from . import providers as _providers

try:  # written by the build when it made the CUDA EP plugin
    from ._cuda_build import CUDA_VERSION as _BUILD_CUDA_VERSION
except ImportError:  # a build without the CUDA EP
    _BUILD_CUDA_VERSION = None

_preloaded = []  # paths (or names) loaded so far, in order


def _cuda_major(version):
    return int(str(version).split(".")[0])


def _get_nvidia_dll_paths(is_windows=None, cuda=True, cudnn=True, build_cuda_version=None, arch=None):
    """Where NVIDIA's wheels keep the CUDA and cuDNN libraries, as path components relative to a site-packages
    folder: CUDA 12's per-component packages (nvidia/cublas/lib/...), CUDA 13's one tree (nvidia/cu13/lib on Linux,
    nvidia/cu13/bin/<arch> on Windows), cuDNN 9 in nvidia/cudnn. Only the main cuDNN library on Linux (it opens its
    sub-libraries itself)."""
    if is_windows is None:
        is_windows = sys.platform == "win32"
    version = build_cuda_version if build_cuda_version is not None else (_BUILD_CUDA_VERSION or "13.0")
    major = _cuda_major(version)
    paths = []
    if cuda:
        if major >= 13:
            if is_windows:
                folder = ("nvidia", f"cu{major}", "bin", arch or _windows_arch())
                names = [f"cublasLt64_{major}.dll", f"cublas64_{major}.dll", f"cufft64_{major - 1}.dll",
                         "curand64_10.dll", f"nvrtc64_{major}0_0.dll", f"cudart64_{major}.dll"]
            else:
                folder = ("nvidia", f"cu{major}", "lib")
                names = [f"libcublasLt.so.{major}", f"libcublas.so.{major}", f"libnvrtc.so.{major}",
                         "libcurand.so.10", f"libcufft.so.{major - 1}", f"libcudart.so.{major}"]
            paths += [folder + (name,) for name in names]
        else:
            sub = "bin" if is_windows else "lib"
            if is_windows:
                components = [("cublas", f"cublasLt64_{major}.dll"), ("cublas", f"cublas64_{major}.dll"),
                              ("cufft", "cufft64_11.dll"), ("curand", "curand64_10.dll"),
                              ("cuda_nvrtc", f"nvrtc64_{major}0_0.dll"), ("cuda_runtime", f"cudart64_{major}.dll")]
            else:
                components = [("cublas", f"libcublasLt.so.{major}"), ("cublas", f"libcublas.so.{major}"),
                              ("cuda_nvrtc", f"libnvrtc.so.{major}"), ("curand", "libcurand.so.10"),
                              ("cufft", "libcufft.so.11"), ("cuda_runtime", f"libcudart.so.{major}")]
            paths += [("nvidia", package, sub, name) for package, name in components]
    if cudnn:
        if is_windows:
            names = ["cudnn64_9.dll", "cudnn_graph64_9.dll", "cudnn_ops64_9.dll", "cudnn_cnn64_9.dll",
                     "cudnn_adv64_9.dll", "cudnn_heuristic64_9.dll", "cudnn_engines_precompiled64_9.dll",
                     "cudnn_engines_runtime_compiled64_9.dll", "cudnn_engines_tensor_ir64_9.dll"]
            paths += [("nvidia", "cudnn", "bin", name) for name in names]
        else:
            paths.append(("nvidia", "cudnn", "lib", "libcudnn.so.9"))
    return paths


def _windows_arch():
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "x64": "x86_64", "aarch64": "arm64"}.get(machine, machine)


def _site_folders():
    """Folders that may hold NVIDIA's wheels: sys.path entries, the site-packages folders, the user's."""
    folders = list(sys.path)
    try:
        folders += site.getsitepackages()
    except AttributeError:  # virtualenv's old site module
        pass
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if user:
        folders.append(user)
    return [f for f in dict.fromkeys(os.path.abspath(f) for f in folders if f) if os.path.isdir(f)]


def preload_dlls(cuda=True, cudnn=True, msvc=True, directory=None):
    """Loads the CUDA (``cuda``) and cuDNN (``cudnn``) libraries the CUDA EP needs, then registers EP libraries that
    could not load before. ``directory``: None searches NVIDIA's wheels in the site-packages folders, then the
    loader's default paths; "" only the wheels; a path only that folder. ``msvc`` is for Windows' C++ runtime and
    does nothing here. Libraries not found are named in one warning; nothing raises."""
    del msvc  # Windows only
    if sys.platform == "win32":
        warnings.warn("tessera.preload_dlls: Tessera's CUDA EP is built for Linux only", RuntimeWarning, stacklevel=2)
        return
    if _BUILD_CUDA_VERSION is None and cuda:
        warnings.warn("tessera.preload_dlls: this build has no CUDA EP; nothing to load", RuntimeWarning,
                      stacklevel=2)
        return
    missing = []
    folders = _site_folders() if not directory else []
    for parts in _get_nvidia_dll_paths(is_windows=False, cuda=cuda, cudnn=cudnn):
        name = parts[-1]
        if directory:
            candidates = [os.path.join(directory, name)]
        else:
            candidates = [os.path.join(folder, *parts) for folder in folders]
        path = next((c for c in candidates if os.path.isfile(c)), None)
        if path is None and directory is None:
            path = name  # the loader's default paths
        if path is None:
            missing.append(name)
            continue
        try:
            ctypes.CDLL(path, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
            _preloaded.append(path)
        except OSError as error:
            missing.append(f"{name} ({error})")
    if missing:
        where = "NVIDIA's site-packages" if directory == "" else (directory or "NVIDIA's site-packages or the "
                                                                               "loader's paths")
        warnings.warn(f"tessera.preload_dlls: not loaded from {where}: {', '.join(missing)}", RuntimeWarning,
                      stacklevel=2)
    _providers._register_plugins_beside_package()


def preloaded_libraries():
    """The libraries preload_dlls loaded, in order (paths, or names the default paths resolved)."""
    return list(_preloaded)
