// Helpers shared by the importer and exporter (private to src/io).
#pragma once

#include <string>

#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>

namespace onnxopt::io {

/// The fields of `msg` that the compiled-in onnx.proto does not know (newer IR versions),
/// serialized.
inline std::string unknownFieldsOf(const google::protobuf::Message& msg) {
  const auto& unknown = msg.GetReflection()->GetUnknownFields(msg);
  if (unknown.empty()) return {};
  std::string out;
  unknown.SerializeToString(&out);
  return out;
}

/// Restores fields saved by unknownFieldsOf.
inline void restoreUnknownFields(google::protobuf::Message& msg, const std::string& fields) {
  if (fields.empty()) return;
  msg.GetReflection()->MutableUnknownFields(&msg)->ParseFromString(fields);
}

}  // namespace onnxopt::io
