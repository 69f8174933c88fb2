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

// A view of `shape` int64 elements of `t` starting at element `offset`.
Tensor View(Tensor& t, size_t offset, const Shape& shape) {
  const size_t bytes = static_cast<size_t>(shape.NumElements()) * sizeof(int64_t);
  char* base = static_cast<char*>(t.raw_data()) + offset * sizeof(int64_t);
  return Tensor::Wrap(DataType::kInt64, shape, base, bytes, t.memory_info());
}

// Row `row` of a row-major int64 tensor whose rows have `shape`.
Tensor Rows(Tensor& t, int64_t row, const Shape& shape) {
  return View(t, static_cast<size_t>(row * shape.NumElements()), shape);
}

// Dim `d` of a declared shape: its value, or -1 when it is symbolic.
int64_t DeclaredDim(const ValueInfo& info, size_t d) {
  const Dim& dim = (*info.shape)[d];
  return dim.is_concrete() ? dim.value : -1;
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

  // The prompt model (nullptr: none) and how many tokens one of its runs takes (0: any number).
  Session* prompt = nullptr;
  int64_t prompt_chunk = 0;
  // Whether its runs may replay the session's automatic graphs (one per prompt length), which copy every cache into
  // the graph's buffers and back: with the session's automatic graphs on and caches of at most
  // kMaxCacheBytesForPromptGraphs (GPT-2 124M at 144 positions: 5.3 MB, ~10 us of copies against ~2 ms of an eager
  // prompt run's launches); otherwise the prompt runs eagerly.
  bool prompt_graphs = false;
  static constexpr size_t kMaxCacheBytesForPromptGraphs = size_t{64} << 20;

  Tensor prompt_device, prompt_staged;  // the prompt's runs in order: [batch, S] per prompt-model run, then [1, batch]
                                        // per prompt token fed through the step
  Tensor token_log;                     // [runs, batch] in staging memory: next_token of every run
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
  void SetupPrompt(const ValueInfo& step_ids);
  void Copy(const Tensor& src, Tensor& dst) { env.CopyTensors({&src, 1}, {&dst, 1}, stream.get()); }
  void Step(size_t t, const Tensor* prompt_token);
  void PromptRun(size_t t, const Tensor& prompt_tokens);
  RunOptions Options(bool replay_graph) const;
};

void GenerationLoop::Impl::Setup() {
  const std::vector<ValueInfo>& ins = session.inputs();
  const std::vector<ValueInfo>& outs = session.outputs();
  const ValueInfo& ids = Find(ins, options.input_ids, "input");
  const ValueInfo& pos = Find(ins, options.position, "input");
  const ValueInfo& next = Find(outs, options.next_token, "output");
  const ValueInfo& next_pos = Find(outs, options.next_position, "output");
  for (const ValueInfo* v : {&ids, &pos, &next, &next_pos}) CheckInt64(*v);
  // input_ids [batch, 1], or [batch, S] with S symbolic: the step session is then its own prompt model.
  if (!ids.shape || ids.shape->size() != 2 || !(*ids.shape)[0].is_concrete() ||
      ((*ids.shape)[1].is_concrete() && (*ids.shape)[1].value != 1))
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: input '", ids.name, "' has shape ", ids.ShapeString(),
         "; a decoding step takes [batch, 1] (or [batch, S] with a symbolic S)");
  token_shape = Shape({DeclaredDim(ids, 0), 1});
  position_shape = FixedShape(pos, "input");
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

  SetupPrompt(ids);
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

// The prompt model: the step session itself when its input_ids has a symbolic sequence axis, or the one in the
// options, which must have the step's names, types and cache shapes.
void GenerationLoop::Impl::SetupPrompt(const ValueInfo& step_ids) {
  prompt = options.prompt_session;
  if (prompt == nullptr && !(*step_ids.shape)[1].is_concrete()) prompt = &session;
  if (prompt == nullptr) return;
  const auto mismatch = [](const std::string& name, const std::string& what) {
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: the prompt model's '", name, "' ", what);
  };
  const std::vector<ValueInfo>& ins = prompt->inputs();
  const std::vector<ValueInfo>& outs = prompt->outputs();
  const ValueInfo& ids = Find(ins, options.input_ids, "prompt model input");
  const ValueInfo& pos = Find(ins, options.position, "prompt model input");
  const ValueInfo& next = Find(outs, options.next_token, "prompt model output");
  const ValueInfo& next_pos = Find(outs, options.next_position, "prompt model output");
  for (const ValueInfo* v : {&ids, &pos, &next, &next_pos}) CheckInt64(*v);
  if (!ids.shape || ids.shape->size() != 2 || ((*ids.shape)[0].is_concrete() && (*ids.shape)[0].value != batch))
    mismatch(ids.name, "has shape " + ids.ShapeString() + "; the prompt model takes [" + std::to_string(batch) +
                           ", S]");
  prompt_chunk = std::max<int64_t>(DeclaredDim(ids, 1), 0);
  if (FixedShape(pos, "prompt model input") != position_shape)
    mismatch(pos.name, "has shape " + pos.ShapeString() + ", the step's " + position_shape.ToString());
  if (!MayHaveShape(next, token_shape) || !MayHaveShape(next_pos, position_shape))
    mismatch(next.name, "and '" + next_pos.name + "' must have the step's shapes " + token_shape.ToString() + " and " +
                            position_shape.ToString());
  for (size_t c = 0; c < caches.size(); ++c) {
    const ValueInfo& in = Find(ins, caches[c].first, "prompt model input");
    Find(outs, caches[c].second, "prompt model output");
    if (in.type != cache_buffers[c].type() || FixedShape(in, "prompt model input") != cache_buffers[c].shape())
      mismatch(in.name, "is " + std::string(DataTypeName(in.type)) + in.ShapeString() + ", the step's cache " +
                            DataTypeName(cache_buffers[c].type()) + cache_buffers[c].shape().ToString());
  }
  // The prompt model reads the step's buffers wherever they are: a value it reads from another device is copied
  // there by its run (and a cache it does not update in place is copied back), correct but not free.
  size_t cache_bytes = 0;
  for (const Tensor& buffer : cache_buffers) cache_bytes += buffer.SizeInBytes();
  prompt_graphs =
      prompt->GraphStatus().rfind("automatic:", 0) == 0 && cache_bytes <= kMaxCacheBytesForPromptGraphs;
}

RunOptions GenerationLoop::Impl::Options(bool replay_graph) const {
  RunOptions run;
  run.stream = stream.get();
  run.synchronize = stream == nullptr;
  // Explicit graphs: one id per step binding (its buffers are fixed); the caller sets it. Otherwise -1, which also
  // keeps automatic graphs away (they would copy every cache in and out of the graph's own buffers; prompt runs
  // allow them when that is cheap, see prompt_graphs).
  if (!replay_graph) run.config["gpu_graph_id"] = "-1";
  return run;
}

// Step t reads tokens[t % 2] (for a step that feeds a prompt token, first overwritten with it) and writes the next
// token to tokens[1 - t % 2] and to row t of the token log.
void GenerationLoop::Impl::Step(size_t t, const Tensor* prompt_token) {
  const int p = static_cast<int>(t % 2);
  if (prompt_token != nullptr) Copy(*prompt_token, tokens[p]);
  RunOptions run = Options(graphs);
  if (graphs) run.config["gpu_graph_id"] = std::to_string(1 + p);
  session.Run(*bindings[p], run);
  if (graphs && ++runs_with_id[p] >= 2) ++stats.graph_replays;
  Tensor logged = Rows(token_log, static_cast<int64_t>(t), token_shape);
  Copy(tokens[1 - p], logged);
}

// Run t of the prompt model: `prompt_tokens` [batch, S] at positions[t % 2]; like a step, the next token and
// position go to tokens / positions[1 - t % 2] and the caches are written in place.
void GenerationLoop::Impl::PromptRun(size_t t, const Tensor& prompt_tokens) {
  const int p = static_cast<int>(t % 2);
  IoBinding b = prompt->CreateIoBinding();
  b.BindInput(options.input_ids, Value(prompt_tokens));
  b.BindInput(options.position, Value(positions[p]));
  b.BindOutput(options.next_token, Value(tokens[1 - p]));
  b.BindOutput(options.next_position, Value(positions[1 - p]));
  for (size_t c = 0; c < caches.size(); ++c) {
    b.BindInput(caches[c].first, Value(cache_buffers[c]));
    b.BindOutput(caches[c].second, Value(cache_buffers[c]));
  }
  RunOptions run = Options(false);
  if (prompt_graphs) run.config.erase("gpu_graph_id");  // the prompt session's automatic graph of this length
  prompt->Run(b, run);
  ++stats.prompt_runs;
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
  if (static_cast<int64_t>(length + max_new_tokens - 1) > m.max_length)
    Fail(ErrorCode::kInvalidArgument, "GenerationLoop: a prompt of ", length, " tokens and ", max_new_tokens,
         " new tokens need ", length + max_new_tokens - 1, " cache positions; the caches hold ", m.max_length);
  if (m.stream) m.stream->Synchronize();  // the buffers below may be in use by the last Generate

  // The runs: prompt-model runs of `chunks` tokens, then the rest of the prompt one token per step, then a step per
  // new token after the first (which the last prompt run chooses).
  std::vector<size_t> chunks;
  size_t fed = 0;
  if (m.prompt != nullptr && m.prompt_chunk == 0 && length >= 2) chunks.push_back(length);
  if (m.prompt != nullptr && m.prompt_chunk > 0) {
    const size_t s = static_cast<size_t>(m.prompt_chunk);
    while (length - chunks.size() * s >= s) chunks.push_back(s);
  }
  for (size_t c : chunks) fed += c;
  const size_t prompt_runs = chunks.size() + (length - fed);
  const size_t runs = prompt_runs + max_new_tokens - 1;

  const int64_t b = m.batch;
  const size_t prompt_elements = length * static_cast<size_t>(b);
  if (!m.prompt_staged.defined() || static_cast<size_t>(m.prompt_staged.shape().NumElements()) < prompt_elements) {
    m.prompt_staged = Tensor::Allocate(DataType::kInt64, Shape({static_cast<int64_t>(prompt_elements)}), m.staging);
    m.prompt_device = Tensor::Allocate(DataType::kInt64, m.prompt_staged.shape(), m.token_memory);
  }
  if (!m.token_log.defined() || m.token_log.shape()[0] < static_cast<int64_t>(runs))
    m.token_log = Tensor::Allocate(DataType::kInt64, Shape({static_cast<int64_t>(runs), b}), m.staging);
  // Staged in run order: [batch, S] per chunk, then [1, batch] per prompt token left for the step.
  auto* staged = static_cast<int64_t*>(m.prompt_staged.raw_data());
  size_t at = 0, first = 0;
  for (size_t c : chunks) {
    for (int64_t s = 0; s < b; ++s)
      for (size_t i = 0; i < c; ++i) staged[at++] = prompts[s][first + i];
    first += c;
  }
  for (size_t i = fed; i < length; ++i)
    for (int64_t s = 0; s < b; ++s) staged[at++] = prompts[s][i];
  Tensor staged_view = View(m.prompt_staged, 0, Shape({static_cast<int64_t>(prompt_elements)}));
  Tensor device_view = View(m.prompt_device, 0, Shape({static_cast<int64_t>(prompt_elements)}));
  m.Copy(staged_view, device_view);
  static_cast<int64_t*>(m.position_staged.raw_data())[0] = 0;
  m.Copy(m.position_staged, m.positions[0]);
  // Run parity must restart at 0 (the position lives in positions[0]); the graphs of both ids stay valid.

  m.stats = Stats{};
  m.stats.prompt_tokens = length;
  std::vector<std::unique_ptr<Event>> done;  // with an EOS token: after each run's token copy
  std::vector<std::vector<int64_t>> generated(static_cast<size_t>(b));
  std::vector<bool> finished(static_cast<size_t>(b), false);
  size_t read = 0;  // runs whose tokens were read
  const auto* log = static_cast<const int64_t*>(m.token_log.raw_data());
  const auto read_step = [&](size_t t) {
    if (t + 1 < prompt_runs) return;  // a prompt run's prediction of the next prompt token
    for (int64_t s = 0; s < b; ++s) {
      if (finished[s]) continue;
      const int64_t token = log[t * static_cast<size_t>(b) + static_cast<size_t>(s)];
      generated[s].push_back(token);
      if (token == m.options.eos_token) finished[s] = true;
    }
  };
  const auto all_finished = [&] { return std::all_of(finished.begin(), finished.end(), [](bool f) { return f; }); };
  at = 0;
  for (size_t t = 0; t < runs; ++t) {
    if (t < chunks.size()) {
      m.PromptRun(t, View(m.prompt_device, at, Shape({b, static_cast<int64_t>(chunks[t])})));
      at += chunks[t] * static_cast<size_t>(b);
    } else if (t < prompt_runs) {
      Tensor token = View(m.prompt_device, at, m.token_shape);
      at += static_cast<size_t>(b);
      m.Step(t, &token);
    } else {
      m.Step(t, nullptr);
    }
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
