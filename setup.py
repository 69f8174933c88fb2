"""Builds the `tessera` Python package with CMake: `pip install --no-build-isolation .`

The extension (tessera._tessera), libtessera.so and any EP plugin libraries the build produces
(libtessera_cuda.so when CUDA is configured) are copied into the package folder, where the module
finds them through its $ORIGIN run path and registers the plugins on import.

Environment:
  TESSERA_BUILD_DIR   reuse an already configured CMake build folder (only the module is built there)
  TESSERA_CMAKE_ARGS  extra CMake configure arguments for a fresh build (e.g. "-DTESSERA_WERROR=OFF")
  CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: all cores)
"""

import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("TESSERA_BUILD_DIR")
        if build_dir and os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
            self._build(build_dir, ["tessera_python"])
        else:
            build_dir = build_dir or os.path.join(os.path.abspath(self.build_temp), "cmake")
            self._configure(build_dir)
            self._build(build_dir, [])  # tests are off: the library, plugins, CLI and the module
        self._copy_artifacts(build_dir, os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name))))

    def _configure(self, build_dir):
        args = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DTESSERA_BUILD_TESTS=OFF",
                "-DTESSERA_BUILD_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        try:  # pip's pybind11 (e.g. on Python 3.12); Debian's pybind11-dev is found by CMake itself
            import pybind11
            args.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
        except ImportError:
            pass
        args += shlex.split(os.environ.get("TESSERA_CMAKE_ARGS", ""))
        subprocess.check_call(args)

    def _build(self, build_dir, targets):
        args = ["cmake", "--build", build_dir, "--parallel", os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL",
                                                                            str(os.cpu_count() or 2))]
        for target in targets:
            args += ["--target", target]
        subprocess.check_call(args)

    @staticmethod
    def _copy_artifacts(build_dir, package_dir):
        os.makedirs(package_dir, exist_ok=True)
        modules = glob.glob(os.path.join(build_dir, "python", "tessera", "_tessera*.so"))
        if not modules:
            raise RuntimeError(f"the CMake build in {build_dir} produced no tessera._tessera module")
        libraries = [p for p in glob.glob(os.path.join(build_dir, "libtessera*.so"))
                     if not os.path.basename(p).startswith("libtessera_testing")]  # the simulated device is for tests
        # The CUDA version of the CUDA EP plugin (tessera.preload_dlls), written by CMake when it built one.
        build_config = glob.glob(os.path.join(build_dir, "python", "tessera", "_cuda_build.py"))
        for path in modules + libraries + build_config:
            shutil.copy2(path, package_dir)


setup(
    packages=["tessera", "tessera.capi"],
    package_dir={"": "python"},
    ext_modules=[CMakeExtension("tessera._tessera")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
