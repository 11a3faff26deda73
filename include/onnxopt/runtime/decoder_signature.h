// What a decoder with a KV cache takes and gives, found by name and shape: the token ids, the
// attention mask, the position ids if it has them, one past/present pair per cache tensor, and
// the logits. The Generator (generator.h) feeds a model through it; anything else the model
// asks for is refused here, once, before a run.
//
//   inputs   input_ids [batch, seq], attention_mask [batch, past + seq],
//            position_ids [batch, seq] (optional), past_key_values.{i}.key/value [batch, heads,
//            past, head_dim]
//   outputs  logits [batch, seq, vocab], present.{i}.key/value [batch, heads, past + seq, head_dim]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/support/data_type.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

/// One cache tensor: the past input it is read from and the present output that extends it.
struct KvCacheEntry {
  std::string past;     ///< past_key_values.{i}.key (or .value)
  std::string present;  ///< present.{i}.key (or .value)
  DataType dtype = DataType::kFloat;
  int64_t heads = 0;     ///< dim 1, static
  int64_t head_dim = 0;  ///< dim 3, static
};

struct DecoderSignature {
  std::string input_ids;
  std::string attention_mask;  ///< "" when the model takes none (then no row may be padded)
  std::string position_ids;    ///< "" when the model derives positions itself
  std::string logits;
  DataType ids_dtype = DataType::kInt64;  ///< of input_ids (int64 or int32)
  DataType mask_dtype = DataType::kInt64;
  DataType position_dtype = DataType::kInt64;
  int64_t vocab = 0;  ///< the logits' last dim where static, else 0 (known after the first run)
  /// Layer by layer, the key before the value (past_key_values.0.key, .0.value, .1.key, ...).
  std::vector<KvCacheEntry> cache;
};

/// The signature of `graph`'s decoder, or kInvalidArgument saying what is missing or wrong: no
/// input_ids or logits, no cache inputs (past_key_values.{i}.key/value, also past.{i}.key and
/// past_key.{i}), a past input without its present output (present.{i}.key/value, also
/// present_key_values.{i}.*) or the reverse, a cache tensor not of rank 4, heads or head_dim
/// dynamic, or past and present disagreeing in type, heads or head_dim. Other inputs without a
/// default are refused too: the Generator would not know what to feed them.
StatusOr<DecoderSignature> decoderSignature(const ir::Graph& graph);

}  // namespace onnxopt::runtime
