#include "tessera/io_binding.h"

#include <algorithm>

#include "tessera/session.h"

namespace tessera {

namespace {
bool HasName(const std::vector<ValueInfo>& infos, const std::string& name) {
  return std::any_of(infos.begin(), infos.end(), [&](const ValueInfo& v) { return v.name == name; });
}
}  // namespace

IoBinding::IoBinding(const Session& session) : session_(&session) {}

void IoBinding::BindInput(const std::string& name, const Value& value) {
  if (!HasName(session_->inputs(), name)) Fail(ErrorCode::kInvalidArgument, "BindInput: model has no input '", name, "'");
  if (value.is_none()) Fail(ErrorCode::kInvalidArgument, "BindInput: value for input '", name, "' is empty");
  for (Input& in : inputs_)
    if (in.name == name) {
      in.value = value;
      return;
    }
  inputs_.push_back({name, value});
}

void IoBinding::BindOutput(const std::string& name, const Value& value) {
  if (!HasName(session_->outputs(), name))
    Fail(ErrorCode::kInvalidArgument, "BindOutput: model has no output '", name, "'");
  if (!value.is_tensor() || !value.tensor().defined())
    Fail(ErrorCode::kInvalidArgument, "BindOutput: output '", name, "' must be bound to an allocated tensor");
  Output out{name, value, value.tensor().memory_info()};
  for (Output& o : bound_outputs_)
    if (o.name == name) {
      o = out;
      return;
    }
  bound_outputs_.push_back(out);
}

void IoBinding::BindOutput(const std::string& name, const MemoryInfo& where) {
  if (!HasName(session_->outputs(), name))
    Fail(ErrorCode::kInvalidArgument, "BindOutput: model has no output '", name, "'");
  Output out{name, Value(), where};
  for (Output& o : bound_outputs_)
    if (o.name == name) {
      o = out;
      return;
    }
  bound_outputs_.push_back(out);
}

void IoBinding::ClearBoundInputs() { inputs_.clear(); }
void IoBinding::ClearBoundOutputs() {
  bound_outputs_.clear();
  outputs_.clear();
}
void IoBinding::SynchronizeInputs() { session_->Synchronize(); }
void IoBinding::SynchronizeOutputs() { session_->Synchronize(); }

std::vector<std::string> IoBinding::BoundOutputNames() const {
  std::vector<std::string> names;
  for (const Output& o : bound_outputs_) names.push_back(o.name);
  return names;
}

}  // namespace tessera
