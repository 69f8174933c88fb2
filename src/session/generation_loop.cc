#include "tessera/generation_loop.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include "tessera/ep/ep_factory.h"
#include "tessera/session.h"

namespace tessera {

namespace {

const ValueInfo& Find(const std::vector<ValueInfo>& infos, const std::string& name, const char* what) {
  for (const ValueInfo& v : infos)
    if (v.name == name) return v;
  std::string names;
  for (const ValueInfo& v : infos) names.append(" '").append(v.name).append("'");
  Fail(ErrorCode::kInvalidArgument, "GenerationLoop: the model has no ", what, " '", name, "' (", what, "s:", names,
       ")");
}

// The concrete dims of a step input or output; the loop needs fixed shapes.
Shape FixedShape(const ValueInfo& info, const char* what) {
  if (!info.shape)
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: ", what, " '", info.name, "' has no declared shape");
  std::vector<int64_t> dims;
  for (const Dim& d : *info.shape) {
    if (!d.is_concrete())
      Fail(ErrorCode::kInvalidArgument, "GenerationLoop: ", what, " '", info.name, "' has shape ", info.ShapeString(),
           "; a decoding step needs fixed shapes (export it with the cache at its maximum length)");
    dims.push_back(d.value);
  }
  return Shape(dims);
}

// Whether an output's declared shape (outputs may declare none) can be `shape`.
bool MayHaveShape(const ValueInfo& info, const Shape& shape) {
  if (!info.shape) return true;
  if (info.shape->size() != shape.rank()) return false;
  for (size_t d = 0; d < shape.rank(); ++d)
    if ((*info.shape)[d].is_concrete() && (*info.shape)[d].value != shape[d]) return false;
  return true;
}

void CheckInt64(const ValueInfo& info) {
  if (info.type != DataType::kInt64 && info.type != DataType::kUndefined)
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: '", info.name, "' must be int64, the model declares ",
         DataTypeName(info.type));
}

// A view of `rows` rows of `row_elements` int64 each, starting at row `first`, of a row-major tensor.
Tensor Rows(Tensor& t, int64_t first, const Shape& shape) {
  const size_t bytes = static_cast<size_t>(shape.NumElements()) * sizeof(int64_t);
  char* base = static_cast<char*>(t.raw_data()) + static_cast<size_t>(first) * bytes;
  return Tensor::Wrap(DataType::kInt64, shape, base, bytes, t.memory_info());
}

}  // namespace

struct GenerationLoop::Impl {
  Environment& env;
  Session& session;
  GenerationLoopOptions options;
  Stats stats;
  int64_t batch = 1, max_length = 0;
  Shape token_shape, position_shape;

  // Device mode: the tokens and the position live in one device's memory and the loop queues everything on
  // `stream`; host mode: every run and copy completes before the next.
  const EpDevice* device = nullptr;
  std::unique_ptr<Stream> stream;
  AllocatorPtr token_memory, staging;  // where input_ids is read; pinned (device mode) or host memory

  std::vector<std::pair<std::string, std::string>> caches;  // (input, output)
  std::vector<Tensor> cache_buffers;
  Tensor tokens[2], positions[2];  // ping-pong: step t reads [t % 2] and writes [1 - t % 2]
  std::optional<IoBinding> bindings[2];
  size_t runs_with_id[2] = {0, 0};  // explicit graphs: the first run warms up, the second captures
  bool graphs = false;

  Tensor prompt_device, prompt_staged;  // [prompt length, batch]
  Tensor token_log;                     // [steps, batch] in staging memory: next_token of every step
  Tensor position_staged;               // [1]: 0, uploaded at the start of every Generate

  Impl(Environment& e, Session& s, GenerationLoopOptions o) : env(e), session(s), options(std::move(o)) {}

  AllocatorPtr AllocatorFor(const MemoryInfo& where, const std::string& input) const {
    if (where.IsHostReadable()) return CreateHostAllocator();
    const EpDevice* d = session.InputEpDevice(input);
    if (d == nullptr || d->factory == nullptr)
      Fail(ErrorCode::kInvalidArgument, "GenerationLoop: no device allocates ", where.ToString(), " for '", input, "'");
    return d->factory->CreateAllocator(where);
  }

  void Setup();
  void Copy(const Tensor& src, Tensor& dst) { env.CopyTensors({&src, 1}, {&dst, 1}, stream.get()); }
  void Step(size_t t, bool prompt_step);
};

void GenerationLoop::Impl::Setup() {
  const std::vector<ValueInfo>& ins = session.inputs();
  const std::vector<ValueInfo>& outs = session.outputs();
  const ValueInfo& ids = Find(ins, options.input_ids, "input");
  const ValueInfo& pos = Find(ins, options.position, "input");
  const ValueInfo& next = Find(outs, options.next_token, "output");
  const ValueInfo& next_pos = Find(outs, options.next_position, "output");
  for (const ValueInfo* v : {&ids, &pos, &next, &next_pos}) CheckInt64(*v);
  token_shape = FixedShape(ids, "input");
  position_shape = FixedShape(pos, "input");
  if (token_shape.rank() != 2 || token_shape[1] != 1)
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: input '", ids.name, "' has shape ", token_shape.ToString(),
         "; a decoding step takes [batch, 1]");
  if (position_shape.NumElements() != 1)
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: input '", pos.name, "' has shape ", position_shape.ToString(),
         "; the position is one int64");
  if (!MayHaveShape(next, token_shape) || !MayHaveShape(next_pos, position_shape))
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: outputs '", next.name, "' and '", next_pos.name,
         "' must have the shapes of inputs '", ids.name, "' and '", pos.name, "'");
  batch = token_shape[0];

  for (const ValueInfo& in : ins) {
    if (in.name.rfind(options.past_prefix, 0) != 0) continue;
    const std::string out = options.present_prefix + in.name.substr(options.past_prefix.size());
    const ValueInfo& present = Find(outs, out, "output");
    const Shape shape = FixedShape(in, "input");
    if ((present.type != DataType::kUndefined && present.type != in.type) || !MayHaveShape(present, shape))
      Fail(ErrorCode::kInvalidArgument, "GenerationLoop: cache output '", out, "' must have the type and shape of '",
           in.name, "' (", DataTypeName(in.type), in.ShapeString(), ")");
    const size_t axis = static_cast<size_t>(options.cache_length_axis);
    if (axis >= shape.rank())
      Fail(ErrorCode::kInvalidArgument, "GenerationLoop: cache '", in.name, "' has rank ", shape.rank(),
           "; cache_length_axis is ", options.cache_length_axis);
    if (max_length != 0 && shape[axis] != max_length)
      Fail(ErrorCode::kInvalidArgument, "GenerationLoop: cache '", in.name, "' holds ", shape[axis],
           " positions, another cache ", max_length);
    max_length = shape[axis];
    caches.push_back({in.name, out});
  }
  if (caches.empty())
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: the model has no cache input (a name starting with '",
         options.past_prefix, "')");

  const MemoryInfo token_place = session.InputMemoryInfo(ids.name);
  const MemoryInfo position_place = session.InputMemoryInfo(pos.name);
  if (!token_place.IsHostReadable() && token_place == position_place) {
    device = session.InputEpDevice(ids.name);
    if (device != nullptr) stream = env.CreateStream(*device);
  }
  if (stream == nullptr) device = nullptr;
  token_memory = AllocatorFor(token_place, ids.name);
  const AllocatorPtr position_memory = AllocatorFor(position_place, pos.name);
  staging = device != nullptr && device->host_accessible_memory ? device->factory->CreateAllocator(*device->host_accessible_memory)
                                                                 : CreateHostAllocator();
  for (int p = 0; p < 2; ++p) {
    tokens[p] = Tensor::Allocate(DataType::kInt64, token_shape, token_memory);
    positions[p] = Tensor::Allocate(DataType::kInt64, position_shape, position_memory);
  }
  position_staged = Tensor::Allocate(DataType::kInt64, position_shape, staging);

  // The caches start as zeros: masked rows must hold finite values (0 x NaN would be NaN).
  for (const auto& [in, out] : caches) {
    const ValueInfo& info = Find(ins, in, "input");
    const Shape shape = FixedShape(info, "input");
    Tensor zeros = Tensor::Allocate(info.type, shape, staging);
    std::memset(zeros.raw_data(), 0, zeros.SizeInBytes());
    Tensor buffer = Tensor::Allocate(info.type, shape, AllocatorFor(session.InputMemoryInfo(in), in));
    env.CopyTensors({&zeros, 1}, {&buffer, 1}, nullptr);
    cache_buffers.push_back(std::move(buffer));
  }

  graphs = options.use_graphs && session.GraphStatus().rfind("explicit", 0) == 0;
  for (int p = 0; p < 2; ++p) {
    IoBinding& b = bindings[p].emplace(session.CreateIoBinding());
    b.BindInput(ids.name, Value(tokens[p]));
    b.BindInput(pos.name, Value(positions[p]));
    b.BindOutput(next.name, Value(tokens[1 - p]));
    b.BindOutput(next_pos.name, Value(positions[1 - p]));
    for (size_t c = 0; c < caches.size(); ++c) {
      b.BindInput(caches[c].first, Value(cache_buffers[c]));
      b.BindOutput(caches[c].second, Value(cache_buffers[c]));  // written in place
    }
  }
}

// Step t reads tokens[t % 2] (for a prompt step, first overwritten with prompt token t) and writes the next token to
// tokens[1 - t % 2] and to row t of the token log.
void GenerationLoop::Impl::Step(size_t t, bool prompt_step) {
  const int p = static_cast<int>(t % 2);
  if (prompt_step) {
    Tensor row = Rows(prompt_device, static_cast<int64_t>(t), token_shape);
    Copy(row, tokens[p]);
  }
  RunOptions run;
  run.stream = stream.get();
  run.synchronize = stream == nullptr;
  // Explicit graphs: one id per binding (its buffers are fixed). Otherwise -1, which also keeps automatic graphs
  // away (they would copy every cache in and out of the graph's own buffers).
  run.config["gpu_graph_id"] = graphs ? std::to_string(1 + p) : "-1";
  session.Run(*bindings[p], run);
  if (graphs && ++runs_with_id[p] >= 2) ++stats.graph_replays;
  Tensor logged = Rows(token_log, static_cast<int64_t>(t), token_shape);
  Copy(tokens[1 - p], logged);
}

GenerationLoop::GenerationLoop(Environment& env, Session& session, GenerationLoopOptions options)
    : impl_(std::make_unique<Impl>(env, session, std::move(options))) {
  impl_->Setup();
}

GenerationLoop::~GenerationLoop() {
  try {
    if (impl_->stream) impl_->stream->Synchronize();
  } catch (...) {  // the failing Generate reported it
  }
}

int64_t GenerationLoop::max_length() const { return impl_->max_length; }
int64_t GenerationLoop::batch() const { return impl_->batch; }
const GenerationLoop::Stats& GenerationLoop::last_stats() const { return impl_->stats; }

std::vector<int64_t> GenerationLoop::Generate(const std::vector<int64_t>& prompt, size_t max_new_tokens) {
  return Generate(std::vector<std::vector<int64_t>>{prompt}, max_new_tokens)[0];
}

std::vector<std::vector<int64_t>> GenerationLoop::Generate(const std::vector<std::vector<int64_t>>& prompts,
                                                           size_t max_new_tokens) {
  Impl& m = *impl_;
  const auto start = std::chrono::steady_clock::now();
  if (static_cast<int64_t>(prompts.size()) != m.batch)
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: ", prompts.size(), " prompts for a model of batch ", m.batch);
  const size_t length = prompts[0].size();
  for (const auto& p : prompts)
    if (p.size() != length || p.empty())
      Fail(ErrorCode::kInvalidArgument, "GenerationLoop: the prompts must have one length >= 1");
  if (max_new_tokens == 0) return std::vector<std::vector<int64_t>>(prompts.size());
  const size_t steps = length + max_new_tokens - 1;
  if (static_cast<int64_t>(steps) > m.max_length)
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: a prompt of ", length, " tokens and ", max_new_tokens,
         " new tokens need ", steps, " cache positions; the caches hold ", m.max_length);
  if (m.stream) m.stream->Synchronize();  // the buffers below may be in use by the last Generate

  const int64_t b = m.batch;
  if (!m.prompt_staged.defined() || m.prompt_staged.shape()[0] < static_cast<int64_t>(length)) {
    m.prompt_staged = Tensor::Allocate(DataType::kInt64, Shape({static_cast<int64_t>(length), b}), m.staging);
    m.prompt_device = Tensor::Allocate(DataType::kInt64, m.prompt_staged.shape(), m.token_memory);
  }
  if (!m.token_log.defined() || m.token_log.shape()[0] < static_cast<int64_t>(steps))
    m.token_log = Tensor::Allocate(DataType::kInt64, Shape({static_cast<int64_t>(steps), b}), m.staging);
  auto* staged = static_cast<int64_t*>(m.prompt_staged.raw_data());
  for (size_t i = 0; i < length; ++i)
    for (int64_t s = 0; s < b; ++s) staged[i * static_cast<size_t>(b) + static_cast<size_t>(s)] = prompts[s][i];
  m.Copy(m.prompt_staged, m.prompt_device);
  static_cast<int64_t*>(m.position_staged.raw_data())[0] = 0;
  m.Copy(m.position_staged, m.positions[0]);
  // Step parity must restart at 0 (the position lives in positions[0]); the graphs of both ids stay valid.

  m.stats = Stats{};
  m.stats.prompt_tokens = length;
  std::vector<std::unique_ptr<Event>> done;  // with an EOS token: after each step's token copy
  std::vector<std::vector<int64_t>> generated(static_cast<size_t>(b));
  std::vector<bool> finished(static_cast<size_t>(b), false);
  size_t read = 0;  // steps whose tokens were read
  const auto* log = static_cast<const int64_t*>(m.token_log.raw_data());
  const auto read_step = [&](size_t t) {
    if (t + 1 < length) return;  // a prompt step's prediction of the next prompt token
    for (int64_t s = 0; s < b; ++s) {
      if (finished[s]) continue;
      const int64_t token = log[t * static_cast<size_t>(b) + static_cast<size_t>(s)];
      generated[s].push_back(token);
      if (token == m.options.eos_token) finished[s] = true;
    }
  };
  const auto all_finished = [&] { return std::all_of(finished.begin(), finished.end(), [](bool f) { return f; }); };
  size_t t = 0;
  for (; t < steps; ++t) {
    m.Step(t, t < length);
    ++m.stats.steps;
    if (m.options.eos_token < 0) continue;
    if (!m.stream) {
      read_step(read++);
    } else {
      done.push_back(m.stream->CreateEvent());
      done.back()->Record(*m.stream);
      while (read <= t && done[read]->Query()) read_step(read++);
    }
    if (all_finished()) break;
  }
  if (m.stream) m.stream->Synchronize();
  for (; read < m.stats.steps && !all_finished(); ++read) read_step(read);
  m.stats.new_tokens = generated[0].size();
  for (const auto& g : generated) m.stats.new_tokens = std::max(m.stats.new_tokens, g.size());
  m.stats.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return generated;
}

}  // namespace tessera
