// A decoder's KV-cache signature, found from the names and static dims of its inputs and
// outputs. Exporters agree on the shape [batch, heads, seq, head_dim] of a cache tensor but not on
// its name, so a few spellings are read; the pair is matched by layer and key/value.
#include "onnxopt/runtime/decoder_signature.h"

#include <map>
#include <optional>
#include <regex>
#include <utility>

namespace onnxopt::runtime {
namespace {

/// A cache tensor's place: its layer, and whether it is the value (else the key).
struct CacheSlot {
  int64_t layer = 0;
  bool value = false;
  bool operator<(const CacheSlot& o) const {
    return layer != o.layer ? layer < o.layer : value < o.value;
  }
};

/// The slot of a cache name of `side` ("past" or "present"): SIDE.{i}.key, SIDE_key_values.{i}.key
/// or SIDE_key.{i} (value alike; '.' or '_' between the parts).
std::optional<CacheSlot> cacheSlot(const std::string& name, const std::string& side) {
  const std::regex layer_first("^" + side + "(_key_values)?[._]([0-9]+)[._](key|value)$");
  const std::regex kind_first("^" + side + "_(key|value)[._]([0-9]+)$");
  std::smatch m;
  if (std::regex_match(name, m, layer_first)) {
    return CacheSlot{std::stoll(m[2].str()), m[3].str() == "value"};
  }
  if (std::regex_match(name, m, kind_first)) {
    return CacheSlot{std::stoll(m[2].str()), m[1].str() == "value"};
  }
  return std::nullopt;
}

std::string dimText(const ir::Dim& d) {
  return d.isKnown() ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param);
}

/// A cache tensor's rank-4 type with static heads (dim 1) and head_dim (dim 3).
Status checkCacheType(const ir::Value& v, KvCacheEntry& entry) {
  const ir::Type& t = v.type();
  if (!t.isTensor() || !t.shape || t.shape->size() != 4) {
    return invalidArgument("cache tensor '{}' is not of rank 4 ([batch, heads, seq, head_dim])",
                           v.name());
  }
  const auto& dims = *t.shape;
  if (!dims[1].isKnown() || !dims[3].isKnown()) {
    return invalidArgument("cache tensor '{}' has dynamic heads or head_dim ([{}, {}, {}, {}])",
                           v.name(), dimText(dims[0]), dimText(dims[1]), dimText(dims[2]),
                           dimText(dims[3]));
  }
  entry.dtype = t.elem_type;
  entry.heads = dims[1].value;
  entry.head_dim = dims[3].value;
  return Status::ok();
}

/// The cache pairs of `graph`, key before value, layer by layer.
StatusOr<std::vector<KvCacheEntry>> cacheEntries(const ir::Graph& graph) {
  std::map<CacheSlot, const ir::Value*> past, present;
  for (const ir::Value* in : graph.inputs()) {
    if (auto slot = cacheSlot(in->name(), "past")) past[*slot] = in;
  }
  for (const ir::Value* out : graph.outputs()) {
    if (auto slot = cacheSlot(out->name(), "present")) present[*slot] = out;
  }
  if (past.empty()) {
    return invalidArgument(
        "no KV-cache inputs (past_key_values.{{i}}.key/value): generation needs a decoder "
        "exported with its cache");
  }
  std::vector<KvCacheEntry> entries;
  for (const auto& [slot, in] : past) {
    auto it = present.find(slot);
    if (it == present.end()) {
      return invalidArgument("cache input '{}' has no present output (present.{}.{})", in->name(),
                             slot.layer, slot.value ? "value" : "key");
    }
    KvCacheEntry entry, out_entry;
    RETURN_IF_ERROR(checkCacheType(*in, entry));
    RETURN_IF_ERROR(checkCacheType(*it->second, out_entry));
    if (entry.dtype != out_entry.dtype || entry.heads != out_entry.heads ||
        entry.head_dim != out_entry.head_dim) {
      return invalidArgument("mismatched cache shapes: '{}' is {}, '{}' is {}", in->name(),
                             ir::typeToString(in->type()), it->second->name(),
                             ir::typeToString(it->second->type()));
    }
    entry.past = in->name();
    entry.present = it->second->name();
    entries.push_back(std::move(entry));
    present.erase(it);
  }
  if (!present.empty()) {
    return invalidArgument("cache output '{}' has no past input", present.begin()->second->name());
  }
  return entries;
}

/// The integer type of token input `v`: int64 or int32.
StatusOr<DataType> indexType(const ir::Value& v) {
  DataType t = v.type().elem_type;
  if (t != DataType::kInt64 && t != DataType::kInt32) {
    return invalidArgument("input '{}' is {}, not int64 or int32", v.name(),
                           ir::typeToString(v.type()));
  }
  return t;
}

/// The vocabulary size: the static last dim of the logits [batch, seq, vocab], else 0.
StatusOr<int64_t> vocabOf(const ir::Value& logits) {
  const ir::Type& t = logits.type();
  if (!t.isTensor()) return invalidArgument("output 'logits' is not a tensor");
  if (!t.shape) return int64_t{0};
  if (t.shape->size() != 3) {
    return invalidArgument("output 'logits' is {}, not of rank 3 ([batch, seq, vocab])",
                           ir::typeToString(t));
  }
  const ir::Dim& d = t.shape->back();
  return d.isKnown() ? d.value : 0;
}

}  // namespace

StatusOr<DecoderSignature> decoderSignature(const ir::Graph& graph) {
  DecoderSignature sig;
  ASSIGN_OR_RETURN(sig.cache, cacheEntries(graph));
  for (const ir::Value* in : graph.inputs()) {
    const std::string& name = in->name();
    if (name == "input_ids") {
      sig.input_ids = name;
      ASSIGN_OR_RETURN(sig.ids_dtype, indexType(*in));
    } else if (name == "attention_mask") {
      sig.attention_mask = name;
      ASSIGN_OR_RETURN(sig.mask_dtype, indexType(*in));
    } else if (name == "position_ids") {
      sig.position_ids = name;
      ASSIGN_OR_RETURN(sig.position_dtype, indexType(*in));
    } else if (!cacheSlot(name, "past") && in->initializer() == nullptr) {
      return invalidArgument(
          "input '{}' is not one that generation feeds (input_ids, attention_mask, "
          "position_ids, past_key_values.{{i}}.key/value)",
          name);
    }
  }
  if (sig.input_ids.empty()) return invalidArgument("no input 'input_ids'");
  for (const ir::Value* out : graph.outputs()) {
    if (out->name() == "logits") {
      sig.logits = out->name();
      ASSIGN_OR_RETURN(sig.vocab, vocabOf(*out));
    }
  }
  if (sig.logits.empty()) return invalidArgument("no output 'logits'");
  return sig;
}

}  // namespace onnxopt::runtime
