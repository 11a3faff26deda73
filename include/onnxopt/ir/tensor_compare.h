// Comparing and hashing tensors by their data, reading external data in chunks (pread) so that a
// mapped multi-gigabyte weight file is never faulted into memory. CSE merges equal initializers
// with these; attribute equality compares tensor attributes with them.
#pragma once

#include <cstdint>

#include "onnxopt/ir/tensor.h"

namespace onnxopt::ir {

/// Byte-exact equality of two tensors (type, dims and data). Data from external files is compared
/// by reading the files in chunks, so mapped pages are not faulted into memory.
bool tensorsEqual(const Tensor& a, const Tensor& b);
/// A hash of dtype, dims and a sample of the data (head, middle and tail, 4 KiB each): for
/// bucketing only; tensorsEqual decides.
uint64_t tensorHash(const Tensor& t);

}  // namespace onnxopt::ir
