"""onnxruntime's onnxruntime_test_python_preload_dlls.py (MIT License, Microsoft), mirrored in pytest form: the
relative paths of the CUDA 12 / CUDA 13 / cuDNN libraries inside NVIDIA's wheels (tessera._get_nvidia_dll_paths, the
helper tessera.preload_dlls searches with), plus Tessera's own cases of preload_dlls itself: a library found in a
site-packages layout or a named folder is loaded into the process, a missing one is named in a warning.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import tessera


def _paths(**kwargs):
    return tessera._get_nvidia_dll_paths(**kwargs)


# ---- onnxruntime's cases --------------------------------------------------------------------------------------

def test_cuda12_windows():
    paths = _paths(is_windows=True, build_cuda_version="12.4", cudnn=False)
    for name in ("cublasLt64_12.dll", "cublas64_12.dll"):
        assert ("nvidia", "cublas", "bin", name) in paths
    assert ("nvidia", "cufft", "bin", "cufft64_11.dll") in paths
    assert ("nvidia", "cuda_runtime", "bin", "cudart64_12.dll") in paths


def test_cuda12_linux():
    paths = _paths(is_windows=False, build_cuda_version="12.4", cudnn=False)
    for expected in [("nvidia", "cublas", "lib", "libcublasLt.so.12"), ("nvidia", "cublas", "lib", "libcublas.so.12"),
                     ("nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12"), ("nvidia", "curand", "lib", "libcurand.so.10"),
                     ("nvidia", "cufft", "lib", "libcufft.so.11"), ("nvidia", "cuda_runtime", "lib", "libcudart.so.12")]:
        assert expected in paths


def test_cuda13_windows_x86_64():
    paths = _paths(is_windows=True, build_cuda_version="13.2", cudnn=False, arch="x86_64")
    for name in ("cublasLt64_13.dll", "cublas64_13.dll", "cufft64_12.dll", "cudart64_13.dll"):
        assert ("nvidia", "cu13", "bin", "x86_64", name) in paths


def test_cuda13_windows_arch_override():
    paths = _paths(is_windows=True, build_cuda_version="13.2", cudnn=False, arch="arm64")
    assert ("nvidia", "cu13", "bin", "arm64", "cudart64_13.dll") in paths


def test_cuda13_linux_is_flat():
    paths = _paths(is_windows=False, build_cuda_version="13.2", cudnn=False)
    for name in ("libcublasLt.so.13", "libcublas.so.13", "libnvrtc.so.13", "libcurand.so.10", "libcufft.so.12",
                 "libcudart.so.13"):
        assert ("nvidia", "cu13", "lib", name) in paths


def test_cudnn_layout_unchanged():
    for version in ("12.4", "13.2"):
        assert ("nvidia", "cudnn", "bin", "cudnn64_9.dll") in _paths(is_windows=True, build_cuda_version=version,
                                                                     cuda=False)
        assert _paths(is_windows=False, build_cuda_version=version, cuda=False) == [
            ("nvidia", "cudnn", "lib", "libcudnn.so.9")]


def test_cuda_and_cudnn_toggles():
    assert _paths(is_windows=False, build_cuda_version="13.2", cuda=False, cudnn=False) == []
    cuda_only = _paths(is_windows=False, build_cuda_version="13.2", cuda=True, cudnn=False)
    assert cuda_only and all(p[1] == "cu13" for p in cuda_only)


# ---- preload_dlls itself (Linux) --------------------------------------------------------------------------------

def _a_shared_library():
    """Some small shared library to stand in for libcudnn.so.9 (it is loaded, never called)."""
    import ctypes.util
    for name in ("z", "m"):
        found = ctypes.util.find_library(name)
        if found:
            for folder in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                           "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"):
                if os.path.isfile(os.path.join(folder, found)):
                    return os.path.join(folder, found)
    pytest.skip("no shared library to stand in for cuDNN on this machine")


def _run(code, extra_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [env.get("PYTHONPATH", ""), extra_path] if p)
    script = textwrap.dedent(code)
    result = subprocess.run([sys.executable, "-W", "always", "-c", script], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the CUDA EP is built for Linux only")
def test_preload_loads_cudnn_from_a_site_packages_layout_and_from_a_folder(tmp_path):
    stand_in = _a_shared_library()
    wheel_lib = tmp_path / "site" / "nvidia" / "cudnn" / "lib"
    wheel_lib.mkdir(parents=True)
    shutil.copy2(stand_in, wheel_lib / "libcudnn.so.9")
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy2(stand_in, folder / "libcudnn.so.9")
    check = """
        import tessera, tessera.preload as p, warnings
        p._BUILD_CUDA_VERSION = p._BUILD_CUDA_VERSION or "13.0"  # a build without the CUDA EP still searches
        tessera.preload_dlls(cuda=False, cudnn=True, directory={directory!r})
        maps = open("/proc/self/maps").read()
        print("LOADED" if {expected!r} in maps else "NOT LOADED", p.preloaded_libraries())
    """
    out = _run(check.format(directory="", expected=str(wheel_lib / "libcudnn.so.9")), str(tmp_path / "site"))
    assert "LOADED" in out and "NOT LOADED" not in out, out
    out = _run(check.format(directory=str(folder), expected=str(folder / "libcudnn.so.9")), "")
    assert "LOADED" in out and "NOT LOADED" not in out, out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the CUDA EP is built for Linux only")
def test_preload_names_what_it_did_not_find(tmp_path):
    out = _run(f"""
        import tessera, tessera.preload as p
        p._BUILD_CUDA_VERSION = p._BUILD_CUDA_VERSION or "13.0"
        tessera.preload_dlls(cuda=False, cudnn=True, directory={str(tmp_path)!r})
        print("RETURNED", p.preloaded_libraries())
    """, "")
    assert "not loaded from" in out and "libcudnn.so.9" in out and "RETURNED []" in out, out
