// The exporter's parts shared by its files (exporter.cc, export_stream.cc, save_model.cc): the
// sink for external data and the Exporter that turns IR into protos.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>

#include "io/atomic_file.h"
#include "io/proto_util.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/verifier.h"
#include "support/big_blocks.h"

namespace onnxopt::io::detail {

/// Main graphs of up to this many nodes are exported as messages (Exporter::prepare).
constexpr size_t kNodesAsMessages = 100000;

/// Calls `fn` on every tensor of a graph (initializers, tensor attributes), recursively.
template <typename Fn>
void forEachTensor(const ir::Graph& graph, Fn&& fn) {
  for (const ir::Value* v : graph.initializers()) {
    if (v->initializer() != nullptr) fn(*v->initializer());
    if (v->sparseInitializer() != nullptr) {
      fn(v->sparseInitializer()->values);
      fn(v->sparseInitializer()->indices);
    }
  }
  for (const ir::Node* n : graph) {
    for (const ir::Attribute& a : n->attributes()) {
      for (const ir::Tensor& t : a.tensors) fn(t);
      for (const auto& g : a.graphs) forEachTensor(*g, fn);
    }
  }
}

template <typename Fn>
void forEachTensor(const ir::Model& model, Fn&& fn) {
  forEachTensor(*model.graph, fn);
  for (const auto& f : model.functions) forEachTensor(*f->body, fn);
}

/// Writes tensor bytes into the external-data file, streaming data that came from another external
/// file with pread so that mapped pages are never touched (peak memory stays small).
class DataSink {
 public:
  DataSink(int fd, std::string location, uint64_t min_bytes)
      : fd_(fd), location_(std::move(location)), min_bytes_(min_bytes) {}

  bool wants(const ir::Tensor& t) const {
    return t.dtype() != ir::DataType::kString && t.byteSize() >= min_bytes_ &&
           (t.byteSize() > 0 || t.externalSource());
  }

  /// Appends the tensor's bytes; fills `proto`'s external_data entries.
  Status write(const ir::Tensor& t, onnx::TensorProto& proto) {
    const uint64_t align = t.byteSize() >= (1u << 20) ? 4096 : 64;
    uint64_t start = (offset_ + align - 1) / align * align;
    if (start > offset_) {
      static const char zeros[4096] = {};
      RETURN_IF_ERROR(writeAll(zeros, start - offset_));
    }
    if (t.externalSource()) {
      RETURN_IF_ERROR(copyFromFile(*t.externalSource()));
    } else {
      RETURN_IF_ERROR(writeAll(reinterpret_cast<const char*>(t.data()), t.byteSize()));
    }
    wrote_any_ = true;
    proto.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, std::string value) {
      auto* kv = proto.add_external_data();
      kv->set_key(key);
      kv->set_value(std::move(value));
    };
    add("location", location_);
    add("offset", std::to_string(start));
    add("length", std::to_string(t.byteSize()));
    return Status::ok();
  }

 private:
  Status writeAll(const char* p, uint64_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n > (1u << 30) ? (1u << 30) : n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return makeError(StatusCode::kIoError, "writing external data: {}", std::strerror(errno));
      }
      p += w;
      n -= static_cast<uint64_t>(w);
      offset_ += static_cast<uint64_t>(w);
    }
    return Status::ok();
  }

  Status copyFromFile(const ir::ExternalSource& src) {
    int in = ::open(src.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
      return makeError(StatusCode::kIoError, "re-reading '{}': {}", src.path, std::strerror(errno));
    }
    std::string buffer(std::min<uint64_t>(src.length, 4u << 20), '\0');
    uint64_t done = 0;
    Status st;
    while (done < src.length) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), src.length - done));
      ssize_t r = ::pread(in, buffer.data(), want, static_cast<off_t>(src.offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        st = makeError(StatusCode::kIoError, "re-reading '{}': unexpected end of file", src.path);
        break;
      }
      st = writeAll(buffer.data(), static_cast<uint64_t>(r));
      if (!st.isOk()) break;
      done += static_cast<uint64_t>(r);
    }
    // The copied range is no longer needed in the page cache by this process.
    ::posix_fadvise(in, static_cast<off_t>(src.offset), static_cast<off_t>(src.length),
                    POSIX_FADV_DONTNEED);
    ::close(in);
    return st;
  }

  int fd_;
  std::string location_;
  uint64_t min_bytes_;
  uint64_t offset_ = 0;
  bool wrote_any_ = false;

 public:
  /// False when every tensor stayed embedded: then no data file is written at all.
  bool wroteAny() const { return wrote_any_; }
};

/// The tensor's proto with its data embedded, unless `sink` takes the data (exporter.cc).
StatusOr<bool> fillTensorProto(const ir::Tensor& t, onnx::TensorProto& proto, DataSink* sink,
                               onnx::TensorProto* tail = nullptr);

class Exporter {
 public:
  Exporter(const ir::Model& model, DataSink* sink) : model_(model), sink_(sink) {}

  Status exportModel(onnx::ModelProto& proto);

  /// Builds the model for writeTo as messages (in an arena), except the nodes of a main graph of
  /// more than kNodesAsMessages nodes, which become serialized bytes: a million nodes are ~30 MB
  /// of bytes but ~300 MB of messages. Below that, messages cost less: bytes are written once,
  /// straight into the output, instead of into a growing buffer first; unless nodes carry unknown
  /// fields, which bytes take as they are. Fails when the model would pass protobuf's 2 GB limit.
  /// `leave_out`, if given, picks main-graph initializers (by index) whose raw_data writeTo leaves
  /// out (the caller hands it over apart).
  Status prepare(const LeaveOut* leave_out = nullptr);
  /// Writes the prepared model: the same bytes as serializing exportModel's proto (fields in
  /// number order: model fields 1-6; the graph: its nodes, its name, its initializers with their
  /// bytes straight from the IR, its other fields; the other model fields).
  bool writeTo(google::protobuf::io::ZeroCopyOutputStream& out);
  /// After prepare: the serialized size, exactly.
  uint64_t byteSize() const { return byte_size_; }

 private:
  void assignNames(const ir::Graph& graph);
  /// A value's own name, or the fresh one assignNames gave it.
  const std::string& nameOf(const ir::Value* v) const {
    return v->name().empty() ? fresh_names_.at(v) : v->name();
  }
  void exportType(const ir::Type& type, onnx::TypeProto& proto);
  void exportValueInfo(const ir::Value* v, onnx::ValueInfoProto& proto, bool with_type);
  Status exportTensor(const ir::Tensor& t, onnx::TensorProto& proto);
  Status exportSparse(const ir::SparseTensor& t, onnx::SparseTensorProto& proto);
  Status exportAttribute(const ir::Attribute& a, onnx::AttributeProto& proto);
  /// Without `with_unknown`, the node's unknown fields are left for the caller to append (as
  /// bytes: protobuf writes them after the known fields, so the result is the same).
  Status exportNode(const ir::Node& n, onnx::NodeProto& proto, bool with_unknown = true);
  Status exportGraph(const ir::Graph& g, onnx::GraphProto& proto);

  const ir::Model& model_;
  DataSink* sink_;
  const ir::Graph* skip_nodes_of_ = nullptr;  ///< exportGraph leaves this graph's nodes out
  std::unique_ptr<google::protobuf::Arena> arena_;
  onnx::ModelProto* rest_ = nullptr;   ///< model fields from 8 on, and unknown fields
  onnx::ModelProto head_;              ///< model fields 1-6
  onnx::GraphProto* graph_ = nullptr;  ///< the main graph without its nodes
  std::string node_bytes_;             ///< the main graph's nodes, as GraphProto field 1 entries
  /// A main-graph initializer (GraphProto field 5) as writeTo writes it: `head` (TensorProto
  /// fields 1-8), the raw_data field (9) from `raw`'s bytes if set, `tail` (the later fields).
  struct InitializerOut {
    onnx::TensorProto* head;
    onnx::TensorProto* tail;
    const ir::Tensor* raw;
    uint64_t size;  ///< the entry's length (after its tag and length)
  };
  std::vector<InitializerOut> initializers_;
  onnx::GraphProto* graph_tail_ = nullptr;  ///< main graph fields after initializer (5)
  uint64_t graph_bytes_ = 0;
  uint64_t byte_size_ = 0;
  /// Names for values that have none. Named values keep theirs, so only the (usually few) unnamed
  /// ones are recorded; `used_` views every name taken, built only when a fresh one is needed.
  std::unordered_map<const ir::Value*, std::string> fresh_names_;
  std::unordered_set<std::string_view> used_;
  bool collected_used_ = false;
  void collectUsed();
  size_t next_id_ = 0;
};

}  // namespace onnxopt::io::detail
