"""Shared test helpers."""

import pytest

import tessera as ort

requires_testing_ep = pytest.mark.skipif(
    "TestingExecutionProvider" not in ort.get_available_providers(),
    reason="the simulated testing EP is not registered (set TESSERA_TESTING_EP_PATH to libtessera_testing_ep.so)")

requires_cuda = pytest.mark.skipif(
    "CUDAExecutionProvider" not in ort.get_available_providers(),
    reason="no CUDA execution provider (libtessera_cuda.so not built or no GPU)")
