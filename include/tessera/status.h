// Errors. Every failure a caller can see is a tessera::Error carrying a code and a message that
// names what was wrong and where (file, node, input). Throwing is the only error channel in the
// C++ API; a failed call leaves the object it was called on usable.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera {

enum class ErrorCode {
  kInvalidArgument,  // a caller-supplied value is wrong (shape, type, device, option)
  kInvalidModel,     // the model file or graph is malformed
  kNotImplemented,   // no kernel / EP supports what was asked
  kOutOfMemory,      // an allocator could not satisfy a request
  kRuntime,          // a kernel or device failed while running
  kTerminated,       // a run was cancelled through RunOptions::terminate
  kIo,               // a file could not be read or written
};

const char* ErrorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// Builds the message from stream-able parts: Fail(kInvalidArgument, "input '", name, "' ...").
template <typename... Parts>
[[noreturn]] void Fail(ErrorCode code, const Parts&... parts);

}  // namespace tessera

#include "tessera/detail/status_impl.h"
