// NumPy .npy files <-> host tensors.
//
// Reads format versions 1.0, 2.0 and 3.0 with little-endian (or byte-order-free) numeric and bool
// dtypes in C order: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1. Writes version 1.0 (2.0 when the header
// does not fit). bfloat16, complex and string tensors have no .npy mapping here and are rejected.
// Errors throw tessera::Error(kIo) for unreadable files and kInvalidArgument for unsupported content,
// naming the file.
#pragma once

#include <filesystem>

#include "tessera/tensor.h"

namespace tessera::cli {

Tensor ReadNpy(const std::filesystem::path& path);
// `tensor` must be host-readable.
void WriteNpy(const std::filesystem::path& path, const Tensor& tensor);

}  // namespace tessera::cli
