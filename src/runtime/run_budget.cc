#include "run_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "describe_node.h"
#include "onnxopt/ir/constants.h"

namespace onnxopt::runtime {
namespace {

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

/// The value of a constant scalar `v` as an integer (int32/int64/bool), or nullopt.
std::optional<int64_t> constantScalar(const ir::Value* v) {
  std::optional<ir::Tensor> t = ir::constantTensor(v);
  if (!t || t->numElements().value_or(0) != 1) return std::nullopt;
  if (t->dtype() == DataType::kBool) {
    if (t->byteSize() != 1) return std::nullopt;
    return int64_t{t->data()[0] != 0};
  }
  std::vector<int64_t> ints = ir::tensorInts(*t);
  if (ints.size() != 1) return std::nullopt;
  return ints[0];
}

const ir::Graph* bodyOf(const ir::Node& n) {
  const ir::Attribute* a = n.findAttribute("body");
  return a == nullptr || a->graphs.size() != 1 ? nullptr : a->graphs[0].get();
}

/// The iterations Loop `n` is certain to make: its trip count, when a constant, and the
/// condition neither starts false nor can turn false.
uint64_t certainLoopTrips(const ir::Node& n, const ir::Graph& body) {
  if (n.numInputs() < 2 || n.input(0) == nullptr) return 0;
  std::optional<int64_t> trips = constantScalar(n.input(0));
  if (!trips || *trips <= 0) return 0;
  if (n.input(1) != nullptr && constantScalar(n.input(1)) != std::optional<int64_t>{1}) return 0;
  return loopNeverStopsEarly(body) ? static_cast<uint64_t>(*trips) : 0;
}

/// The scan length of Scan (opset 9+) `n` when its first scan input's static shape fixes it.
uint64_t certainScanLength(const ir::Node& n) {
  const ir::Attribute* count = n.findAttribute("num_scan_inputs");
  if (count == nullptr || count->i < 1 || static_cast<size_t>(count->i) > n.numInputs()) return 0;
  const ir::Value* first = n.input(n.numInputs() - static_cast<size_t>(count->i));
  if (first == nullptr || !first->type().isTensor() || !first->type().shape) return 0;
  const auto& dims = *first->type().shape;
  const ir::Attribute* axes = n.findAttribute("scan_input_axes");
  int64_t axis = axes != nullptr && !axes->ints.empty() ? axes->ints[0] : 0;
  auto rank = static_cast<int64_t>(dims.size());
  if (axis < -rank || axis >= rank) return 0;
  const ir::Dim& d = dims[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
  return d.isKnown() && d.value > 0 ? static_cast<uint64_t>(d.value) : 0;
}

/// "MAX", or "LEFT left of the MAX" once part of the limit is spent.
std::string amountLeft(uint64_t left, uint64_t max) {
  return left == max ? fmt::format("{}", max) : fmt::format("{} left of the {}", left, max);
}

}  // namespace

uint64_t defaultMaxRunMemory() {
  uint64_t total = kUnbounded;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) total = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    total = std::min<uint64_t>(total, limit.rlim_cur);
  }
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");  // "max" (no limit) does not parse
  if (uint64_t max = 0; cgroup >> max) total = std::min(total, max);
  return total / 4 * 3;
}

uint64_t saturatingMul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kUnbounded : r;
}

uint64_t saturatingAdd(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kUnbounded : r;
}

uint64_t hostBytes(const kernels::HostTensor& t) {
  uint64_t bytes = t.bytes.size();
  for (const std::string& s : t.strings) bytes += sizeof(std::string) + s.size();
  return bytes;
}

bool loopNeverStopsEarly(const ir::Graph& body) {
  if (body.numOutputs() < 1 || body.inputs().size() < 2) return false;
  const ir::Value* cond = body.output(0);
  const ir::Value* cond_in = body.inputs()[1];
  if (cond == cond_in) return true;
  if (const ir::Node* p = cond->producer();
      p != nullptr && p->opType() == "Identity" && p->domain().empty() && p->input(0) == cond_in) {
    return true;
  }
  return constantScalar(cond) == std::optional<int64_t>{1};
}

uint64_t certainIterations(const ir::Graph& graph, int64_t opset) {
  uint64_t total = 0;
  for (const ir::Node* n : graph) {
    if (!n->domain().empty() && n->domain() != "ai.onnx") continue;
    const ir::Graph* body = bodyOf(*n);
    if (body == nullptr) continue;
    uint64_t trips = n->opType() == "Loop"                 ? certainLoopTrips(*n, *body)
                     : n->opType() == "Scan" && opset >= 9 ? certainScanLength(*n)
                                                           : 0;
    if (trips == 0) continue;
    uint64_t each = saturatingAdd(1, certainIterations(*body, opset));
    total = saturatingAdd(total, saturatingMul(trips, each));
  }
  return total;
}

uint64_t staticBytes(const ir::Value& v) {
  const ir::Type& type = v.type();
  int bits = dataTypeBits(type.elem_type);
  if (!type.isTensor() || !type.shape || bits <= 0) return 0;
  uint64_t count = 1;
  for (const ir::Dim& d : *type.shape) {
    if (!d.isKnown() || d.value < 0) return 0;
    count = saturatingMul(count, static_cast<uint64_t>(d.value));
  }
  return saturatingMul(count, static_cast<uint64_t>(bits)) / 8;
}

RunBudget::RunBudget(const RunLimits& limits)
    : max_iterations_(limits.max_iterations),
      max_memory_(limits.max_memory != 0 ? limits.max_memory : defaultMaxRunMemory()) {}

Status RunBudget::reserveIterations(const ir::Node& node, uint64_t count) const {
  auto max = static_cast<uint64_t>(std::max<int64_t>(max_iterations_, 0));
  uint64_t left = max - std::min(max, iterations_);
  if (count <= left) return Status::ok();
  return makeError(StatusCode::kResourceExhausted,
                   "{}: would run {}{} loop iterations (those of the loops it nests included), "
                   "more than the {} a run may make (the limit; --max-iterations)",
                   describeNode(node), count == kUnbounded ? "more than " : "", count,
                   amountLeft(left, max));
}

Status RunBudget::iterate(const ir::Node& node) {
  if (++iterations_ <= static_cast<uint64_t>(std::max<int64_t>(max_iterations_, 0))) {
    return Status::ok();
  }
  return makeError(StatusCode::kResourceExhausted,
                   "{}: the run makes more than {} loop iterations (the limit; --max-iterations)",
                   describeNode(node), max_iterations_);
}

Status RunBudget::reserveMemory(const ir::Node& node, const std::string& what,
                                uint64_t bytes) const {
  uint64_t left = max_memory_ - std::min(max_memory_, held_);
  if (bytes <= left) return Status::ok();
  return makeError(StatusCode::kResourceExhausted,
                   "{}: {} would hold {}{} bytes, more than the {} bytes a run's values may hold "
                   "(the limit; --max-memory)",
                   describeNode(node), what, bytes == kUnbounded ? "more than " : "", bytes,
                   amountLeft(left, max_memory_));
}

Status RunBudget::checkMemory(const ir::Node& node) const {
  if (held_ <= max_memory_) return Status::ok();
  return makeError(StatusCode::kResourceExhausted,
                   "{}: the run's values hold more than {} bytes (the limit; --max-memory)",
                   describeNode(node), max_memory_);
}

}  // namespace onnxopt::runtime
