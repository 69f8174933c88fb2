#include "test_env.h"

namespace tessera::test {

Environment& TestEnv() {
  static Environment* env = [] {
    auto* e = new Environment(LogLevel::kWarning);
    e->RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH);
    return e;
  }();
  return *env;
}

std::string EpTypeFromShortName(const std::string& short_name) {
  if (short_name == "cpu") return "CPUExecutionProvider";
  if (short_name == "testing") return kTestingEpName;
  return short_name;
}

SessionOptions OptionsFor(const std::string& short_name) {
  SessionOptions options;
  if (short_name != "cpu") options.AddProvider(EpTypeFromShortName(short_name));
  return options;
}

}  // namespace tessera::test
