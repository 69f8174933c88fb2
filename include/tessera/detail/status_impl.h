#pragma once

#include <sstream>

namespace tessera {

template <typename... Parts>
[[noreturn]] void Fail(ErrorCode code, const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(code, os.str());
}

#define TESSERA_CHECK(cond, code, ...)            \
  do {                                            \
    if (!(cond)) ::tessera::Fail(code, __VA_ARGS__); \
  } while (0)

}  // namespace tessera
