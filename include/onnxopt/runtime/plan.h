// The execution plan: an optimized model lowered for concrete input shapes. Every value of the
// main graph gets its concrete dtype and dims, every node a placement (device kernel, host shape
// arithmetic, CPU fallback, zero-copy view), and the steps that run are listed in order, copies
// between host and device included, with each device buffer's offset in one arena (the memory
// planner, memory_planner.h). Plain C++, no CUDA: the CUDA executor reads a Plan and never the IR
// (docs/cuda_runtime.md): what it needs of the model besides the plan (weights' data, the nodes
// the reference interpreter runs) comes through the plan's PlanHost.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/runtime/reference_executor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

/// The element type and concrete dims of one graph input, and the data of a value input.
struct InputShape {
  // A constructor rather than an aggregate, so that {dtype, dims} leaves `value` out quietly.
  InputShape(DataType dtype_in = DataType::kUndefined, std::vector<int64_t> dims_in = {},
             std::optional<std::string> value_in = std::nullopt)
      : dtype(dtype_in), dims(std::move(dims_in)), value(std::move(value_in)) {}
  DataType dtype = DataType::kUndefined;  ///< kUndefined: the declared type
  std::vector<int64_t> dims;
  /// A value input's data (raw bytes, as kernels::HostTensor::bytes), given where the plan is made
  /// for it (addInputValues): the nodes reading it plan as if it were a constant, and the plan
  /// holds for this value only. Empty: planned by shape, the data read at run time.
  std::optional<std::string> value;
  bool operator==(const InputShape& other) const = default;
};

/// Concrete shapes by graph input name. Inputs with a default initializer may be left out.
using InputShapes = std::map<std::string, InputShape>;

/// The graph inputs of `model` whose data `device` needs when planning: those that some node
/// reads as a value operand (Capabilities::valueInputs: Slice's starts, Resize's scales, Expand's
/// shape), directly or through host shape arithmetic (Add, Concat, Cast, ... of integers), and
/// whose declared type is an index or float type. Computed once per model.
std::set<std::string> valueInputNames(const ir::Model& model, const kernels::Capabilities& device);

/// Gives each shape of a value input in `names` its data from `feeds`, where the feed has at
/// most `max_elements` elements (a larger one stays keyed by shape alone).
void addInputValues(InputShapes& shapes, const Feeds& feeds, const std::set<std::string>& names,
                    int64_t max_elements);

/// Where a node runs.
enum class Placement {
  kDevice,       ///< a device kernel: `device.supports(query)` said yes
  kHost,         ///< shape arithmetic on small integer tensors, on the host (often folded)
  kCpuFallback,  ///< the device said no (`fallback_reason`): a reference kernel on host copies
  kView,         ///< Reshape/Flatten/Squeeze/Unsqueeze/Identity: its output aliases its input
};

/// "device", "host", "cpu-fallback", "view".
const char* placementName(Placement placement);

/// Where a value's memory is.
enum class Location {
  kInput,  ///< a graph input: the caller's buffer, bound at each run
  /// Constant data (an initializer, a Constant, a folded host value), read on the host from
  /// `host_value` or the initializer of `source`; with `upload`, also on the device, uploaded once
  /// per session outside the arena (the weights).
  kConstant,
  kArena,  ///< device memory at `offset` in the plan's device arena
  kHost,   ///< host memory at `offset` in the plan's host arena (fallback and host values)
};

const char* locationName(Location location);

/// One value of the main graph (or a copy of one on the other side, see Step::kCopy*).
struct PlannedValue {
  std::string name;
  const ir::Value* source =
      nullptr;  ///< the IR value (for messages and tests; executors use `weight`)
  /// A weight (an initializer, or an input's default): its handle for PlanHost::weightData, the
  /// same in every plan of the model (an executor keeps one upload per handle); -1: none.
  int weight = -1;
  DataType dtype = DataType::kUndefined;
  /// Concrete dims; when `dynamic`, the dims known when planning with -1 for the others (empty
  /// when not even the rank is known).
  std::vector<int64_t> dims;
  bool rank_known = true;
  /// Some dim (or, for a view, its base's buffer) is known only at run time. A dynamic value
  /// with its own buffer has no offset (a dynamic view of a static buffer keeps that buffer's);
  /// the CUDA executor runs its producer on the CPU and holds the value on the host.
  bool dynamic = false;
  int64_t bytes = 0;  ///< the data's size (0 when dynamic)
  Location location = Location::kArena;
  int64_t offset = -1;  ///< kArena / kHost: offset in that arena; -1 when allocated at run time
  bool upload = false;  ///< kConstant read by the device: a weight
  /// A view or in-place output: the value whose buffer it shares (views and in-place outputs
  /// already carry that buffer's offset; base is for reports and checks).
  int base = -1;
  /// Known when planning: constants, folded host values, small initializers, and the data of a
  /// value input the plan was made for (InputShape::value; its location stays kInput).
  std::optional<kernels::HostTensor> host_value;
  bool is_graph_output = false;

  /// Whether a kernel may read its data on the host when it is prepared: constant data, or a value
  /// input's (a view of either: ask its root).
  bool knownWhenPlanning() const { return location == Location::kConstant || host_value; }
};

/// One node of the main graph, in topological order.
struct PlannedNode {
  const ir::Node* node = nullptr;  ///< for messages and tests (executors use PlanHost::runNode)
  std::string name;                ///< the node's name, or "Op producing 'out'"
  std::string domain, op;
  int64_t opset = 0;
  Placement placement = Placement::kDevice;
  std::string fallback_reason;  ///< kCpuFallback: the device's "no"
  std::vector<int> inputs;      ///< value ids (-1: omitted optional input), as the node reads them
  std::vector<int> outputs;     ///< value ids (-1: omitted output)
  /// Main-graph values that the node's subgraphs (If/Loop/Scan bodies) read without naming them
  /// as inputs: live until the node runs, copied to its side like inputs.
  std::vector<int> implicit_inputs;
  kernels::KernelAttrs attrs;  ///< parsed once (the executor never reads the node's attributes)
  bool has_subgraphs = false;  ///< If/Loop/Scan: the host runs it through PlanHost::runNode
  /// kHost nodes whose inputs were all known: evaluated while planning, no run-time step.
  bool folded = false;
  /// Some input or output has dims known only at run time: the executor shapes it when it runs.
  bool dynamic = false;
  /// Output `in_place_output` reuses the buffer of input `in_place_input` (-1: none).
  int in_place_input = -1;
  int in_place_output = -1;
};

/// What runs, in order. Copies are explicit steps (not flags on nodes): a value that one side
/// produces and the other reads is copied once, into a value of its own, before its first reader.
struct Step {
  enum class Kind { kNode, kCopyToHost, kCopyToDevice };
  Kind kind = Kind::kNode;
  int node = -1;  ///< kNode: index in Plan::nodes
  int src = -1;   ///< copies: value ids
  int dst = -1;
};

struct Plan;

/// What an executor of a plan reads of the model besides the plan (whose values and nodes name
/// it by handle and index), behind an interface so that no executor reads the IR: the data of the
/// weights, and the nodes the host runs through the reference interpreter. buildPlan makes it
/// over the IR (the model must outlive it).
class PlanHost {
 public:
  virtual ~PlanHost() = default;
  /// The data of weight `handle` (PlannedValue::weight): the initializer's, a sparse one's dense
  /// data.
  virtual StatusOr<kernels::HostTensor> weightData(int handle) const = 0;
  /// Runs plan node `node` (an index in Plan::nodes) as the reference executor runs it
  /// (runNodeOnHost: subgraphs, sequence and optional ops, other domains). `inputs` is aligned
  /// with the node's inputs followed by its implicit inputs (nullptr: omitted or not given).
  virtual StatusOr<std::vector<HostValue>> runNode(int node,
                                                   const std::vector<const HostValue*>& inputs,
                                                   const RunLimits& limits) const = 0;
};

struct PlanOptions {
  /// A host (kHost) node's outputs may hold at most this many elements each.
  int64_t max_host_elements = 64;
  /// Reuse an elementwise op's input buffer for its output where legal.
  bool in_place = true;
  /// Values (by name) whose inferred or declared dims a run's data contradicted (a declared output
  /// shape no input can make): planned as shaped at run time, nothing assumed of their dims.
  std::set<std::string> shaped_at_run_time;
  /// The device's check of a node at its planned dtypes, dims and constant inputs (a kernel may
  /// refuse shapes, ranks or attribute values that its capability row admits), asked of every
  /// node the capabilities place on the device whose values are all static. A "no" places the
  /// node on the CPU (kCpuFallback, with the reason), so the plan's placements are what runs.
  /// Empty: the capability answer stands. `plan` holds the node's values (it is being built).
  std::function<kernels::Support(const Plan& plan, const PlannedNode& node)> check_node;
};

struct Plan {
  InputShapes input_shapes;  ///< the signature it was built for
  std::vector<PlannedValue> values;
  std::vector<PlannedNode> nodes;
  std::vector<Step> steps;
  std::vector<int> inputs;       ///< graph inputs, in graph order (value ids)
  std::vector<int> outputs;      ///< graph outputs, in graph order
  int64_t arena_bytes = 0;       ///< the device arena
  int64_t host_arena_bytes = 0;  ///< the host arena (fallback and run-time host values)
  int64_t weight_bytes = 0;      ///< constants with `upload`: uploaded once, outside the arena
  /// Sum of the aligned sizes of every device arena buffer: what one allocation per value would
  /// take (arena_bytes / intermediate_bytes is the planner's saving).
  int64_t intermediate_bytes = 0;
  bool has_dynamic = false;  ///< some node must be shaped at run time
  /// The model's side of the plan (weights' data, interpreted nodes); set by buildPlan.
  std::shared_ptr<const PlanHost> host;

  int64_t countPlacement(Placement placement) const;
  /// A text summary: counts per placement, arena, host arena, weight and intermediate bytes, the
  /// value inputs planned for their data, each fallback node with its reason, the dynamic nodes.
  std::string summary() const;
};

/// Lowers `model`'s main graph for `shapes`. The model's values must carry inferred types
/// (ir::inferShapes, which the -O pipelines run): their symbolic dims are evaluated with the
/// symbols bound from the concrete input dims; shape subgraphs are evaluated on the host with the
/// reference kernels. An input missing, unknown, of another dtype or rank, or whose dims
/// contradict the declared ones, is kInvalidArgument before anything is planned; a node whose
/// planning fails is an error naming it.
StatusOr<Plan> buildPlan(const ir::Model& model, const InputShapes& shapes,
                         const kernels::Capabilities& device, const PlanOptions& options = {});

}  // namespace onnxopt::runtime
