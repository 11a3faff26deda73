// The weights of a serialized ModelProto (and its nodes' unknown fields), cut out before protobuf
// parses the rest:
//
//   model:  .. graph(7) { .. initializer(5) { dims(1) .. name(8) raw_data(9): N bytes .. } .. } ..
//   rest:   .. graph(7) { .. initializer(5) { dims(1) .. name(8) .. } .. } ..  (lengths rewritten)
//   raw[k]: where the k-th initializer's raw_data lies in `model`
//
// Protobuf copies every string it parses: a model's weights were copied out of the caller's
// buffer into the message, and again out of the message into the IR (a move, unless the message
// lives in an arena). The importer views them where they lie instead (parseModelBinary with an
// owner of the bytes). Only the main graph's initializers are cut: they hold nearly all of a
// model's bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onnxopt::io {

struct RawDataSplit {
  struct Span {
    uint64_t offset = 0;  ///< in the input
    uint64_t size = 0;
    bool cut = false;  ///< false: the initializer's raw_data (if any) stayed in `rest`
  };
  std::string rest;       ///< the model without the cut fields
  std::vector<Span> raw;  ///< one per initializer of the main graph, in order
  /// One per node of the main graph, in order: the bytes of its fields that this build's
  /// NodeProto does not know (as protobuf would keep them as unknown fields), cut out of `rest`;
  /// empty when no node has any.
  std::vector<std::string> node_unknown;
};

/// Cuts out the raw_data fields of at least `min_bytes` bytes of the main graph's initializers,
/// and the fields of its nodes that NodeProto does not know here (onnx 1.12's has no
/// metadata_props: protobuf would parse each into an unknown-field set, kept as bytes anyway).
/// nullopt when there is nothing to cut, or when the bytes are not plain enough to cut safely
/// (malformed wire data, groups, a second graph or raw_data field, which protobuf would merge or
/// override): the caller then parses `model` whole, with the same result and the copies.
std::optional<RawDataSplit> splitRawData(std::string_view model, uint64_t min_bytes);

}  // namespace onnxopt::io
