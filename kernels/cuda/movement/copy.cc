// Host half of the strided copy (copy.h): merging dims, choosing memcpy or the kernel, and the
// view-level copy the movement families call.
#include "kernels/cuda/movement/copy.h"

#include <fmt/format.h>

#include <cstdlib>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

int movableElementBytes(DataType type) {
  if (type == DataType::kString || type == DataType::kUndefined) return 0;
  int bits = dataTypeBits(type);
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? bits / 8 : 0;
}

std::optional<StridedCopy> planStridedCopy(int element_bytes, const std::vector<int64_t>& dims,
                                           const std::vector<int64_t>& src_strides, const void* src,
                                           const std::vector<int64_t>& dst_strides, void* dst) {
  StridedCopy copy;
  copy.element_bytes = element_bytes;
  copy.src = src;
  copy.dst = dst;
  copy.count = 1;
  for (int64_t d : dims) copy.count *= d;
  if (copy.count == 0) return copy;
  // Innermost first: a dim merges into the one inside it when both sides step over it by exactly
  // the inner dim's extent.
  std::vector<int64_t> m_dims, m_src, m_dst;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] == 1) continue;
    if (!m_dims.empty() && src_strides[i] == m_src.back() * m_dims.back() &&
        dst_strides[i] == m_dst.back() * m_dims.back()) {
      m_dims.back() *= dims[i];
      continue;
    }
    m_dims.push_back(dims[i]);
    m_src.push_back(src_strides[i]);
    m_dst.push_back(dst_strides[i]);
  }
  if (m_dims.size() > static_cast<size_t>(kMaxCopyRank)) return std::nullopt;
  // Wider words: where both sides walk the innermost dim contiguously, move it as words of up to
  // 16 bytes (one 128-bit load and store per thread: a head split of D = 64 fp16 moves 8 words
  // per row instead of 64 elements) when its extent, every other stride and both pointers allow.
  if (!m_dims.empty() && m_src[0] == 1 && m_dst[0] == 1) {
    for (int64_t word = kMaxWordBytes; word > element_bytes; word /= 2) {
      const int64_t per = word / element_bytes;
      bool ok = (m_dims[0] * element_bytes) % word == 0 &&
                reinterpret_cast<uintptr_t>(src) % static_cast<uintptr_t>(word) == 0 &&
                reinterpret_cast<uintptr_t>(dst) % static_cast<uintptr_t>(word) == 0;
      for (size_t i = 1; ok && i < m_dims.size(); ++i) {
        ok = m_src[i] % per == 0 && m_dst[i] % per == 0;
      }
      if (!ok) continue;
      copy.element_bytes = static_cast<int>(word);
      copy.count /= per;
      m_dims[0] /= per;
      for (size_t i = 1; i < m_dims.size(); ++i) {
        m_src[i] /= per;
        m_dst[i] /= per;
      }
      break;
    }
  }
  copy.rank = static_cast<int>(m_dims.size());
  // The furthest element either side reaches, to pick 32- or 64-bit index math.
  int64_t reach = copy.count;
  int64_t src_reach = 0, dst_reach = 0;
  for (int k = 0; k < copy.rank; ++k) {
    size_t j = m_dims.size() - 1 - static_cast<size_t>(k);  // back to outermost-first order
    copy.dims[k] = m_dims[j];
    copy.src_strides[k] = m_src[j];
    copy.dst_strides[k] = m_dst[j];
    src_reach += std::llabs(m_src[j]) * (m_dims[j] - 1);
    dst_reach += std::llabs(m_dst[j]) * (m_dims[j] - 1);
  }
  // 2^30, not 2^31 - 1: the grid-stride step (at most 2^28) must not overflow past the count.
  constexpr int64_t kNarrow = int64_t{1} << 30;
  copy.wide_index = reach > kNarrow || src_reach > kNarrow || dst_reach > kNarrow;
  return copy;
}

const void* advance(const void* base, int64_t elements, int element_bytes) {
  return static_cast<const char*>(base) + elements * element_bytes;
}

void* advance(void* base, int64_t elements, int element_bytes) {
  return static_cast<char*>(base) + elements * element_bytes;
}

StatusOr<int64_t> normalizedAxis(const std::string& op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return invalidArgument("{}: axis {} is out of range for rank {}", op, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

Support movableSupport(const std::string& op, const ConstTensorView& x, const ConstTensorView& y,
                       int64_t max_rank) {
  if (movableElementBytes(x.dtype) == 0) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", op, dataTypeName(x.dtype)));
  }
  if (y.dtype != x.dtype) {
    return Support::no(fmt::format("{}: the input is {} but the output {}", op,
                                   dataTypeName(x.dtype), dataTypeName(y.dtype)));
  }
  if (Support s = requireDevice(op, x, "input 0"); !s) return s;
  if (Support s = requireDevice(op, y, "output 0"); !s) return s;
  for (const ConstTensorView* v : {&x, &y}) {
    if (v->strides.size() != v->dims.size()) {
      return Support::no(fmt::format("{}: a view has {} dims and {} strides", op, v->dims.size(),
                                     v->strides.size()));
    }
    if (v->rank() > max_rank) {
      return Support::no(
          fmt::format("{}: rank {}; the CUDA kernel takes at most {}", op, v->rank(), max_rank));
    }
  }
  return Support::yes();
}

Support copyViewSupport(const std::string& op, const ConstTensorView& src, const TensorView& dst) {
  if (src.dims != dst.dims) {
    return Support::no(
        fmt::format("{}: copying {} into {}", op, dimsText(src.dims), dimsText(dst.dims)));
  }
  if (src.strides.size() != src.dims.size() || dst.strides.size() != dst.dims.size()) {
    return Support::no(fmt::format("{}: a view's strides do not match its dims", op));
  }
  int bytes = movableElementBytes(src.dtype);
  if (bytes == 0 || src.dtype != dst.dtype) {
    return Support::no(fmt::format("{}: cannot copy {} into {}", op, dataTypeName(src.dtype),
                                   dataTypeName(dst.dtype)));
  }
  if (!planStridedCopy(bytes, src.dims, src.strides, src.data, dst.strides, dst.data)) {
    return Support::no(fmt::format("{}: the copy needs more than {} dims", op, kMaxCopyRank));
  }
  return Support::yes();
}

Support copyJobsSupport(const std::string& op, const StatusOr<std::vector<CopyJob>>& jobs) {
  if (!jobs.isOk()) return Support::no(jobs.status().message());
  for (const CopyJob& job : jobs.value()) {
    if (Support s = copyViewSupport(op, job.src, job.dst); !s) return s;
  }
  return Support::yes();
}

Status runCopyJobs(const std::string& op, const std::vector<CopyJob>& jobs, CudaStream stream) {
  for (const CopyJob& job : jobs) RETURN_IF_ERROR(copyView(op, job.src, job.dst, stream));
  return Status::ok();
}

Status copyView(const std::string& op, const ConstTensorView& src, const TensorView& dst,
                CudaStream stream) {
  if (Support s = copyViewSupport(op, src, dst); !s) {
    return Status(src.dims != dst.dims ? StatusCode::kInvalidArgument : StatusCode::kUnimplemented,
                  s.reason);
  }
  std::optional<StridedCopy> copy = planStridedCopy(movableElementBytes(src.dtype), src.dims,
                                                    src.strides, src.data, dst.strides, dst.data);
  ONNXOPT_CUDA_CHECK(launchStridedCopy(*copy, streamOf(stream)), op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
