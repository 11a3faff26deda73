// Writing an exported model: the prepared model is streamed field by field, tensor bytes straight
// from the IR, into a buffer or a file.
#include "io/exporter_internal.h"

namespace onnxopt::io {
namespace detail {

Status Exporter::prepare(const LeaveOut* leave_out) {
  google::protobuf::ArenaOptions arena_options;
  arena_options.start_block_size = 64 << 10;
  arena_options.max_block_size = 8 << 20;
  arena_options.block_alloc = support::allocateArenaBlock;
  arena_options.block_dealloc = support::freeArenaBlock;
  arena_ = std::make_unique<google::protobuf::Arena>(arena_options);
  rest_ = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(arena_.get());
  // Nodes with unknown fields (a newer IR's metadata_props: torch's dynamo exporter writes a
  // stack trace per node) go as bytes too: their saved fields are appended as they are, instead
  // of parsed into each message's unknown-field set and serialized again.
  uint64_t unknown_bytes = 0;
  for (const ir::Node* n : *model_.graph) unknown_bytes += n->unknownFields().size();
  if (model_.graph->numNodes() > kNodesAsMessages || unknown_bytes > 0) {
    skip_nodes_of_ = model_.graph.get();
    node_bytes_.reserve(unknown_bytes + 64 * model_.graph->numNodes());
  }
  RETURN_IF_ERROR(exportModel(*rest_));

  // The main graph's nodes (of a large graph), one reused message at a time.
  using google::protobuf::internal::WireFormatLite;
  const uint32_t node_tag = WireFormatLite::MakeTag(onnx::GraphProto::kNodeFieldNumber,
                                                    WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  if (skip_nodes_of_ != nullptr) {
    google::protobuf::io::StringOutputStream bytes(&node_bytes_);
    google::protobuf::io::CodedOutputStream out(&bytes);
    onnx::NodeProto node;
    for (const ir::Node* n : *model_.graph) {
      node.Clear();
      RETURN_IF_ERROR(exportNode(*n, node, /*with_unknown=*/false));
      const std::string& unknown = n->unknownFields();
      size_t size = node.ByteSizeLong() + unknown.size();
      if (size > static_cast<size_t>(INT_MAX) ||
          node_bytes_.size() > static_cast<size_t>(INT_MAX)) {
        return invalidArgument("the model exceeds protobuf's 2 GB limit; use --external-data");
      }
      out.WriteTag(node_tag);
      out.WriteVarint32(static_cast<uint32_t>(size));
      node.SerializeWithCachedSizes(&out);
      out.WriteRaw(unknown.data(), static_cast<int>(unknown.size()));
    }
  }

  // Model fields numbered below the graph's (7) go before it, the others after.
  if (rest_->has_ir_version()) head_.set_ir_version(rest_->ir_version());
  if (rest_->has_producer_name()) head_.set_producer_name(rest_->producer_name());
  if (rest_->has_producer_version()) head_.set_producer_version(rest_->producer_version());
  if (rest_->has_domain()) head_.set_domain(rest_->domain());
  if (rest_->has_model_version()) head_.set_model_version(rest_->model_version());
  if (rest_->has_doc_string()) head_.set_doc_string(rest_->doc_string());
  rest_->clear_ir_version();
  rest_->clear_producer_name();
  rest_->clear_producer_version();
  rest_->clear_domain();
  rest_->clear_model_version();
  rest_->clear_doc_string();
  graph_ = rest_->unsafe_arena_release_graph();

  // The graph's fields after the initializers (5) move to graph_tail_; graph_ keeps node and name.
  graph_tail_ = google::protobuf::Arena::CreateMessage<onnx::GraphProto>(arena_.get());
  {
    const google::protobuf::Descriptor* d = graph_->GetDescriptor();
    std::vector<const google::protobuf::FieldDescriptor*> later;
    for (int i = 0; i < d->field_count(); ++i) {
      if (d->field(i)->number() > onnx::GraphProto::kInitializerFieldNumber) {
        later.push_back(d->field(i));
      }
    }
    const google::protobuf::Reflection* r = graph_->GetReflection();
    r->SwapFields(graph_, graph_tail_, later);
    r->MutableUnknownFields(graph_)->Swap(r->MutableUnknownFields(graph_tail_));
  }
  uint64_t graph_bytes = node_bytes_.size() + graph_->ByteSizeLong() + graph_tail_->ByteSizeLong();
  for (size_t k = 0; k < initializers_.size(); ++k) {
    InitializerOut& init = initializers_[k];
    if (init.raw != nullptr && leave_out != nullptr && (*leave_out)(k, *init.raw)) {
      init.raw = nullptr;
    }
    init.size = init.head->ByteSizeLong() + init.tail->ByteSizeLong();
    if (init.raw != nullptr) {
      const uint64_t n = init.raw->byteSize();
      init.size += 1 + google::protobuf::io::CodedOutputStream::VarintSize64(n) + n;
    }
    graph_bytes += 1 + google::protobuf::io::CodedOutputStream::VarintSize64(init.size) + init.size;
    if (graph_bytes > static_cast<uint64_t>(INT_MAX)) break;
  }
  if (graph_bytes > static_cast<uint64_t>(INT_MAX)) {
    return invalidArgument("the model exceeds protobuf's 2 GB limit; use --external-data");
  }
  graph_bytes_ = graph_bytes;
  // The graph field: its tag (field 7: one byte), its length, its bytes.
  uint64_t total =
      head_.ByteSizeLong() + 1 +
      google::protobuf::io::CodedOutputStream::VarintSize32(static_cast<uint32_t>(graph_bytes)) +
      graph_bytes + rest_->ByteSizeLong();
  if (total > static_cast<uint64_t>(INT_MAX)) {
    return invalidArgument("the model exceeds protobuf's 2 GB limit; use --external-data");
  }
  byte_size_ = total;
  return Status::ok();
}

bool Exporter::writeTo(google::protobuf::io::ZeroCopyOutputStream& stream) {
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedOutputStream out(&stream);
  // ByteSizeLong (called in prepare) cached the sizes SerializeWithCachedSizes relies on.
  head_.SerializeWithCachedSizes(&out);
  out.WriteTag(WireFormatLite::MakeTag(onnx::ModelProto::kGraphFieldNumber,
                                       WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  out.WriteVarint32(static_cast<uint32_t>(graph_bytes_));
  out.WriteRaw(node_bytes_.data(), static_cast<int>(node_bytes_.size()));
  graph_->SerializeWithCachedSizes(&out);
  const uint32_t initializer_tag = WireFormatLite::MakeTag(
      onnx::GraphProto::kInitializerFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  const uint32_t raw_tag = WireFormatLite::MakeTag(onnx::TensorProto::kRawDataFieldNumber,
                                                   WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  for (const InitializerOut& init : initializers_) {
    out.WriteTag(initializer_tag);
    out.WriteVarint32(static_cast<uint32_t>(init.size));
    init.head->SerializeWithCachedSizes(&out);
    if (init.raw != nullptr) {
      out.WriteTag(raw_tag);
      out.WriteVarint32(static_cast<uint32_t>(init.raw->byteSize()));
      out.WriteRaw(init.raw->data(), static_cast<int>(init.raw->byteSize()));
    }
    init.tail->SerializeWithCachedSizes(&out);
  }
  graph_tail_->SerializeWithCachedSizes(&out);
  rest_->SerializeWithCachedSizes(&out);
  return !out.HadError();
}

}  // namespace detail

using detail::Exporter;

StatusOr<size_t> serializeModelInto(const ir::Model& model,
                                    const std::function<char*(size_t)>& allocate,
                                    const LeaveOut& leave_out) {
  Exporter exporter(model, nullptr);
  RETURN_IF_ERROR(exporter.prepare(leave_out ? &leave_out : nullptr));
  const auto size = static_cast<size_t>(exporter.byteSize());
  char* buffer = allocate(size);
  if (buffer == nullptr) return makeError(StatusCode::kInternal, "no memory for the model");
  google::protobuf::io::ArrayOutputStream out(buffer, static_cast<int>(size));
  if (!exporter.writeTo(out) || static_cast<size_t>(out.ByteCount()) != size) {
    return makeError(StatusCode::kInternal, "serializing the model");
  }
  return size;
}

StatusOr<std::string> serializeModel(const ir::Model& model) {
  std::string bytes;
  RETURN_IF_ERROR(serializeModelInto(model, [&](size_t size) {
                    bytes.resize(size);
                    return bytes.data();
                  }).status());
  return bytes;
}

}  // namespace onnxopt::io
