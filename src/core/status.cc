#include "tessera/status.h"

namespace tessera {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidModel: return "invalid model";
    case ErrorCode::kNotImplemented: return "not implemented";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kRuntime: return "runtime error";
    case ErrorCode::kTerminated: return "terminated";
    case ErrorCode::kIo: return "i/o error";
  }
  return "error";
}

Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

}  // namespace tessera
