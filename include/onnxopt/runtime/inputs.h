// Inputs to run a model on: seeded random values for the inputs not given, with sizes for dynamic
// dims that let the model run (spatial dims large enough for every convolution window, index
// inputs within their tables), and checks of given values and pinned shapes against the declared
// types. `opt run`, `opt check` and runtime::checkModels use them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

/// Inclusive bounds for the values of a random integer input.
struct IntRange {
  int64_t lo = 0;
  int64_t hi = 3;
};

/// The most bytes one generated or read input may take (4 GiB): past it, the error says which
/// input and how large rather than trying to allocate it.
inline constexpr uint64_t kMaxInputBytes = uint64_t{4} << 30;

/// The bytes of a tensor of `dims` and `dtype`, or an error (naming `what`) when a dim is negative,
/// the product overflows, or it exceeds kMaxInputBytes.
StatusOr<uint64_t> checkedByteSize(const std::vector<int64_t>& dims, DataType dtype,
                                   const std::string& what);

struct RandomInputOptions {
  uint64_t seed = 0;
  /// Shapes pinned by name (`--input-shape NAME=d0,d1,...`).
  std::map<std::string, std::vector<int64_t>> shapes;
  /// The size of a named symbolic dim (the same symbol gets the same size); unnamed unknown dims
  /// get 1.
  int64_t symbolic_dim = 1;
  /// Inputs whose dynamic spatial dims (firstSpatialAxis and up) get this size instead: those
  /// feeding a convolution or pooling (spatialInputSizes).
  std::map<std::string, int64_t> spatial;
  /// Ranges of integer inputs by name; others get 0..3.
  std::map<std::string, IntRange> int_ranges;
  /// Sizes of named symbolic dims (symbolSizes): a symbol pinned in one input ("N" of
  /// `--input-shape x=6,9,4`) gets the same size in the others. Before spatial and symbolic_dim.
  std::map<std::string, int64_t> symbols;
};

/// The size each named symbolic dim of the graph inputs gets in a run: from a pinned shape, else
/// the spatial size of an input feeding a convolution, else options.symbolic_dim (the first input
/// that names a symbol decides). Reads shapes, spatial and symbolic_dim of `options`.
std::map<std::string, int64_t> symbolSizes(const ir::Graph& graph,
                                           const RandomInputOptions& options);

/// The one recipe for the random inputs of a run (`opt run`, `opt check`, the Python package's
/// run() and check(), --precision's analysis): `seed`, the pinned `shapes`, `symbolic_dim`, the
/// spatial sizes of inputs feeding a window (spatialInputSizes), then the sizes derived from
/// those (deriveInputSizes).
RandomInputOptions randomInputOptions(const ir::Graph& graph, uint64_t seed,
                                      std::map<std::string, std::vector<int64_t>> shapes = {},
                                      int64_t symbolic_dim = 1);

/// Recomputes what follows from the shapes, spatial sizes and symbolic_dim of `options`: the
/// symbols' sizes (symbolSizes) and the integer inputs' ranges (inferIntRanges). Call it again
/// after changing the spatial sizes.
void deriveInputSizes(const ir::Graph& graph, RandomInputOptions& options);

/// A seeded random value for graph input `input`: normal floats, integers in their range, random
/// bools. `chosen`, when given, receives the sizes picked for dynamic dims ("batch=2", "dim 2=32").
StatusOr<kernels::HostTensor> randomInput(const ir::Value& input, const RandomInputOptions& options,
                                          std::vector<std::string>* chosen = nullptr);

/// Inputs of rank 2 to 5 that reach a Conv or pooling node (through any ops) and have dynamic
/// spatial dims, with a size for those dims large enough that every convolution and pooling of the
/// graph has outputs: the product of their strides times the largest dilated kernel, at least 32,
/// at most maxSpatialSize (224 for images, more for 1-D signals).
std::map<std::string, int64_t> spatialInputSizes(const ir::Graph& graph);

/// The first spatial axis of an input of `rank`: 2 for [N, C, spatial...], 1 for a batch of signals
/// [N, samples] (which a model unsqueezes or frames before its convolutions).
size_t firstSpatialAxis(size_t rank);

/// The largest spatial size spatialInputSizes may pick for an input of `rank`.
int64_t maxSpatialSize(size_t rank);

/// Sensible ranges for the graph's integer inputs, from the consumers they reach (through Cast,
/// Reshape, Unsqueeze, Squeeze or Flatten): Gather indices into a tensor whose gathered axis has
/// size n get 0..n-1 (token ids within the embedding table), RoiAlign batch indices 0..N-1; the
/// sequence_lens of LSTM, GRU and RNN (and ReverseSequence's) get 1..T, T the time dim of the
/// sequence they describe (1 when it is not known before the run); an Expand shape gets ones.
/// Otherwise, one named like a mask gets 0..1, one named like a length 1..4. Sizes of dynamic
/// dims are those `sizes` gives the inputs (pinned shapes, spatial sizes, symbolic_dim; its
/// int_ranges are not read).
std::map<std::string, IntRange> inferIntRanges(const ir::Graph& graph,
                                               const RandomInputOptions& sizes);
/// The same with default sizes (symbolic dims 1).
std::map<std::string, IntRange> inferIntRanges(const ir::Graph& graph);

/// Checks a tensor given for graph input `input` (`source` names where it came from, for the
/// message: a file): element type, rank and static dims as declared.
Status checkGivenInput(const ir::Value& input, const kernels::HostTensor& t,
                       const std::string& source);

/// Checks a pinned shape against `input`'s declared rank and static dims, and its size; `what`
/// opens the message ("--input-shape x").
Status checkPinnedShape(const ir::Value& input, const std::vector<int64_t>& dims,
                        const std::string& what);

/// The value of one graph input for a run.
struct InputValue {
  std::string name;
  kernels::HostTensor value;
  /// The sizes chosen for its dynamic dims ("batch=2", "H=32"); empty for a given value.
  std::vector<std::string> dynamic_dims;
};

/// A value for every input of `graph` that has no default initializer, in graph order: the one in
/// `given`, else a random one (randomInput). Errors name the input.
StatusOr<std::vector<InputValue>> makeInputs(const ir::Graph& graph, const Feeds& given,
                                             const RandomInputOptions& options);

}  // namespace onnxopt::runtime
