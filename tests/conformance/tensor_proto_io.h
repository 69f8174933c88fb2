// Reading ONNX backend-test data files (input_N.pb / output_N.pb) into tessera Values.
//
// A file holds a TensorProto, SequenceProto or OptionalProto; which one is decided by the model's
// declared type for that input or output, as the ONNX backend runner does. Tensors come from raw_data
// (little-endian) or the typed repeated fields. Malformed content throws Error(kInvalidModel) naming
// the file; an unreadable file throws kIo. bfloat16 data stored as uint16 (numpy has no bfloat16) is
// read as the bfloat16 the model declares.
#pragma once

#include <filesystem>
#include <string>

#include "onnx/onnx-data_pb.h"
#include "onnx/onnx_pb.h"
#include "tessera/tessera.h"

namespace tessera::conformance {

// `label` names the tensor in error messages.
Tensor TensorFromProto(const onnx::TensorProto& proto, const std::string& label);
Value ValueFromSequenceProto(const onnx::SequenceProto& proto, const std::string& label);
Value ValueFromOptionalProto(const onnx::OptionalProto& proto, const std::string& label);
// Reads `path` as the message kind `type` describes (tensor, sequence or optional).
Value ReadTestValue(const std::filesystem::path& path, const onnx::TypeProto& type);
// Parses any protobuf message from a file; throws kIo / kInvalidModel naming the file.
void ReadProtoFile(const std::filesystem::path& path, google::protobuf::MessageLite& message);

}  // namespace tessera::conformance
