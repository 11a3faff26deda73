// What one run of the reference interpreter has spent against its RunLimits (executor.h): loop
// iterations, nested ones included, and bytes of the values it computed and holds. Loops ask it
// before they start whether what their trip count and static shapes already show still fits, and
// count each iteration; the interpreter charges every value it stores and checks the total after
// each node.
#pragma once

#include <cstdint>
#include <string>

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

/// Three quarters of the memory this process may use: the machine's physical memory, or less
/// where an address-space limit (ulimit -v) or the cgroup's memory.max says so. RunLimits'
/// max_memory when it is 0.
uint64_t defaultMaxRunMemory();

/// a * b and a + b, saturating at UINT64_MAX (sizes and iteration counts of hostile models).
uint64_t saturatingMul(uint64_t a, uint64_t b);
uint64_t saturatingAdd(uint64_t a, uint64_t b);

/// The bytes a host tensor holds (a string's characters and its header).
uint64_t hostBytes(const kernels::HostTensor& t);

/// Whether a Loop's body always asks for another iteration: its condition output is its condition
/// input passed through (directly or by Identity) or a constant true. Such a Loop with a trip count
/// runs exactly that many iterations.
bool loopNeverStopsEarly(const ir::Graph& body);

/// Iterations that running `graph` once is certain to make in the loops it holds directly (not in
/// If branches), nested ones included: a Loop whose trip count is a constant and that never stops
/// early, a Scan whose scan length its first scan input's static shape fixes. Others count 0 (a
/// lower bound), so that an up-front refusal is never wrong.
uint64_t certainIterations(const ir::Graph& graph, int64_t opset);

/// The bytes one value of `v`'s static type takes, when its element type and every dim are
/// known; 0 otherwise.
uint64_t staticBytes(const ir::Value& v);

class RunBudget {
 public:
  explicit RunBudget(const RunLimits& limits);

  /// Before loop node `node` starts: it will run `count` iterations, nested ones included.
  /// kResourceExhausted when they do not fit what is left of the iteration limit.
  Status reserveIterations(const ir::Node& node, uint64_t count) const;
  /// One body run of `node`; kResourceExhausted past the limit.
  Status iterate(const ir::Node& node);
  /// Before loop node `node` gathers `what` (a scan output), which will take `bytes`:
  /// kResourceExhausted when they do not fit what is left of the memory limit.
  Status reserveMemory(const ir::Node& node, const std::string& what, uint64_t bytes) const;

  /// `bytes` more held, or fewer; checked by checkMemory.
  void charge(uint64_t bytes) { held_ = saturatingAdd(held_, bytes); }
  void release(uint64_t bytes) { held_ -= std::min(held_, bytes); }
  /// kResourceExhausted when the run holds more than the memory limit (after `node` ran).
  Status checkMemory(const ir::Node& node) const;

 private:
  int64_t max_iterations_;
  uint64_t max_memory_;
  uint64_t iterations_ = 0;
  uint64_t held_ = 0;
};

}  // namespace onnxopt::runtime
