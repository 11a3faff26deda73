#include "io/raw_data_split.h"

#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>

namespace onnxopt::io {
namespace {

// Wire format: each field is a varint key (number << 3 | wire type) and a payload.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
constexpr uint64_t kModelGraph = 7, kGraphNode = 1, kGraphInitializer = 5, kTensorRawData = 9;

bool readVarint(std::string_view in, size_t& pos, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= in.size()) return false;
    auto byte = static_cast<uint8_t>(in[pos++]);
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) return true;
  }
  return false;
}

size_t varintSize(uint64_t value) {
  return google::protobuf::io::CodedOutputStream::VarintSize64(value);
}

void appendVarint(std::string& out, uint64_t value) {
  uint8_t bytes[10];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(value, bytes);
  out.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(end - bytes));
}

/// One field of a message: its number, and for length-delimited fields, where its length varint
/// starts and where its payload lies.
struct Field {
  uint64_t number = 0;
  uint32_t wire_type = 0;
  size_t length_at = 0;  ///< the length varint (length-delimited fields)
  size_t begin = 0, end = 0;
};

/// Reads the field at `pos` of `in`, a message's bytes, and moves past it; false on bytes that are
/// not plain fields (truncated, groups, an unknown wire type).
bool nextField(std::string_view in, size_t& pos, Field& f) {
  uint64_t key;
  if (!readVarint(in, pos, key)) return false;
  f.number = key >> 3;
  f.wire_type = static_cast<uint32_t>(key & 7);
  if (f.number == 0) return false;
  uint64_t skip = 0;
  switch (f.wire_type) {
    case kVarint: {
      uint64_t ignored;
      return readVarint(in, pos, ignored);
    }
    case kFixed64:
      skip = 8;
      break;
    case kFixed32:
      skip = 4;
      break;
    case kLengthDelimited:
      f.length_at = pos;
      if (!readVarint(in, pos, skip)) return false;
      break;
    default:
      return false;  // groups (3, 4): not in ONNX's protos
  }
  if (skip > in.size() - pos) return false;
  f.begin = pos;
  f.end = pos + skip;
  pos = f.end;
  return true;
}

/// A message of the graph (an initializer or a node) with fields cut out of it: where its length
/// varint and payload lie in the model, and the cut fields (key to payload end), in order.
struct Cut {
  size_t length_at, begin, end;
  std::vector<std::pair<size_t, size_t>> removed;
  uint64_t removedBytes() const {
    uint64_t n = 0;
    for (const auto& [from, to] : removed) n += to - from;
    return n;
  }
};

/// Whether NodeProto, as this build's onnx_proto has it, knows field `number` (its fields are
/// numbered below 64: a mask, read once from the descriptor).
bool knownNodeField(uint64_t number) {
  static const uint64_t known = [] {
    uint64_t mask = 0;
    const google::protobuf::Descriptor* d = onnx::NodeProto::descriptor();
    for (int i = 0; i < d->field_count(); ++i) {
      const int n = d->field(i)->number();
      if (n < 64) mask |= uint64_t{1} << n;
    }
    return mask;
  }();
  return number < 64 && ((known >> number) & 1) != 0;
}

}  // namespace

std::optional<RawDataSplit> splitRawData(std::string_view model, uint64_t min_bytes) {
  // The graph field: exactly one (two would be merged by protobuf).
  std::optional<Field> graph;
  for (size_t pos = 0; pos < model.size();) {
    Field f;
    if (!nextField(model, pos, f)) return std::nullopt;
    if (f.number == kModelGraph) {
      if (graph || f.wire_type != kLengthDelimited) return std::nullopt;
      graph = f;
    }
  }
  if (!graph) return std::nullopt;

  RawDataSplit split;
  std::vector<Cut> cuts;
  bool node_fields_cut = false;
  uint64_t removed = 0;  // from the graph's payload
  const std::string_view g = model.substr(0, graph->end);
  for (size_t pos = graph->begin; pos < graph->end;) {
    Field f;
    if (!nextField(g, pos, f)) return std::nullopt;
    if (f.number != kGraphInitializer && f.number != kGraphNode) continue;
    if (f.wire_type != kLengthDelimited) return std::nullopt;
    const std::string_view m = model.substr(0, f.end);
    Cut cut{f.length_at, f.begin, f.end, {}};
    if (f.number == kGraphNode) {
      // Fields this build's NodeProto does not know (a newer IR's metadata_props), as protobuf
      // would keep them: the unknown fields' bytes, in order.
      std::string unknown;
      for (size_t npos = f.begin; npos < f.end;) {
        const size_t key_at = npos;
        Field nf;
        if (!nextField(m, npos, nf)) return std::nullopt;
        if (knownNodeField(nf.number)) continue;
        unknown.append(model.substr(key_at, npos - key_at));
        cut.removed.emplace_back(key_at, npos);
      }
      node_fields_cut = node_fields_cut || !unknown.empty();
      split.node_unknown.push_back(std::move(unknown));
    } else {
      std::optional<Field> raw;
      size_t raw_key_at = 0;
      for (size_t tpos = f.begin; tpos < f.end;) {
        const size_t key_at = tpos;
        Field tf;
        if (!nextField(m, tpos, tf)) return std::nullopt;
        if (tf.number != kTensorRawData) continue;
        if (raw || tf.wire_type != kLengthDelimited) return std::nullopt;  // the last one would win
        raw = tf;
        raw_key_at = key_at;
      }
      RawDataSplit::Span span;
      if (raw && raw->end - raw->begin >= min_bytes && raw->end > raw->begin) {
        span = {raw->begin, raw->end - raw->begin, true};
        cut.removed.emplace_back(raw_key_at, raw->end);
      }
      split.raw.push_back(span);
    }
    if (cut.removed.empty()) continue;
    const uint64_t old_length = f.end - f.begin;
    const uint64_t new_length = old_length - cut.removedBytes();
    removed += cut.removedBytes() + varintSize(old_length) - varintSize(new_length);
    cuts.push_back(std::move(cut));
  }
  if (cuts.empty()) return std::nullopt;
  if (!node_fields_cut) split.node_unknown.clear();

  const uint64_t graph_length = graph->end - graph->begin;
  const uint64_t new_graph_length = graph_length - removed;
  split.rest.reserve(model.size() - removed - varintSize(graph_length) +
                     varintSize(new_graph_length));
  split.rest.append(model.substr(0, graph->length_at));
  appendVarint(split.rest, new_graph_length);
  size_t from = graph->begin;
  for (const Cut& cut : cuts) {
    split.rest.append(model.substr(from, cut.length_at - from));
    appendVarint(split.rest, (cut.end - cut.begin) - cut.removedBytes());
    size_t at = cut.begin;
    for (const auto& [cut_from, cut_to] : cut.removed) {
      split.rest.append(model.substr(at, cut_from - at));
      at = cut_to;
    }
    split.rest.append(model.substr(at, cut.end - at));
    from = cut.end;
  }
  split.rest.append(model.substr(from));
  return split;
}

}  // namespace onnxopt::io
