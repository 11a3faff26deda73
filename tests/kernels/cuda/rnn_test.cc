// LSTM, GRU and RNN on CUDA (kernels/cuda/rnn/rnn.cc) against the reference kernels, for float,
// float16 and bfloat16: steps 1, 5 and 17, batch 1 and 3, input 4 and 16, hidden 8 and 32, and odd
// sizes (3 steps, batch 2, input 7, hidden 37), every direction, then one attribute at a time:
// layout 1, shorter sequence_lens (one of length 0), as a constant and as a run-time value,
// initial states, peepholes, clip, GRU's linear_before_reset, input_forget, activations with alpha
// and beta, no bias, opsets 7 and 22, outputs left out, and all of them at once. Each output the
// node asks for is compared. The sizes take both paths of the products: the plain kernel (at most
// 4096 multiply-adds) and cuBLASLt, with and without 16-byte aligned rows. The recurrence carries
// rounding from step to step, so the tolerance is the dtype's scaled by (1 + steps / 4). Label gpu.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "../test_tensors.h"
#include "device_harness.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels {
namespace {

struct RnnCase {
  std::string op = "LSTM";
  int64_t opset = 14;
  DataType dtype = DataType::kFloat;
  int64_t seq = 5, batch = 3, input = 16, hidden = 32;
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = true;
  bool lens = false;          ///< shorter sequences: S, S/2 rounded up, 0 (batch 3) or S - 1
  bool runtime_lens = false;  ///< sequence_lens not given as a host constant (a run-time value)
  bool initial = false;       ///< initial_h (and initial_c)
  bool peepholes = false;
  float clip = 0;  ///< 0: no clip
  int64_t linear_before_reset = -1;
  bool input_forget = false;
  bool activations = false;  ///< a non-default list, with alpha and beta
  std::vector<bool> outputs = {true, true, true};
  std::string name;
};

void PrintTo(const RnnCase& c, std::ostream* os) {
  *os << c.name;
}

int64_t gatesOf(const std::string& op) {
  return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
}

std::string nameOf(const RnnCase& c) {
  std::string n = fmt::format("{}_{}_T{}_B{}_I{}_H{}_{}", c.op, dataTypeName(c.dtype), c.seq,
                              c.batch, c.input, c.hidden, c.direction);
  if (c.layout != 0) n += "_layout1";
  if (!c.bias) n += "_nobias";
  if (c.lens) n += c.runtime_lens ? "_seqlensruntime" : "_seqlens";
  if (c.initial) n += "_initial";
  if (c.peepholes) n += "_peepholes";
  if (c.clip > 0) n += "_clip";
  if (c.linear_before_reset >= 0) n += fmt::format("_lbr{}", c.linear_before_reset);
  if (c.input_forget) n += "_inputforget";
  if (c.activations) n += "_activations";
  const char* outs[] = {"Y", "Yh", "Yc"};
  std::string asked;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (c.outputs[i]) asked += outs[i];
  }
  if (asked != (c.op == "LSTM" ? "YYhYc" : "YYh")) n += "_only" + asked;
  return n + fmt::format("_opset{}", c.opset);
}

struct Size {
  int64_t seq, batch, input, hidden;
};

/// The op with default attributes at these sizes.
RnnCase plain(const char* op, DataType t, const Size& s, const char* direction) {
  RnnCase c;
  c.op = op;
  c.dtype = t;
  c.seq = s.seq;
  c.batch = s.batch;
  c.input = s.input;
  c.hidden = s.hidden;
  c.direction = direction;
  return c;
}

std::vector<RnnCase> rnnCases() {
  std::vector<RnnCase> out;
  auto add = [&](RnnCase c) {
    if (c.op != "LSTM") c.outputs.resize(2);
    c.name = nameOf(c);
    out.push_back(c);
  };
  // The last: odd sizes, so that no row of X, W, R or the state is 16-byte aligned.
  const Size sizes[] = {
      {1, 1, 4, 8}, {5, 3, 16, 32}, {17, 3, 4, 8}, {17, 1, 16, 32}, {3, 2, 7, 37}};
  const DataType types[] = {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16};
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    for (DataType t : types) {
      for (const Size& s : sizes) {
        for (const char* dir : {"forward", "reverse", "bidirectional"}) add(plain(op, t, s, dir));
      }
      // One attribute at a time, at two sizes and two directions.
      for (const Size& s : {sizes[1], sizes[2], sizes[4]}) {
        for (const char* dir : {"reverse", "bidirectional"}) {
          const RnnCase base = plain(op, t, s, dir);
          std::vector<RnnCase> variants(7, base);
          variants[0].layout = 1;
          variants[1].lens = true;
          variants[2].initial = true;
          variants[3].clip = 0.5f;
          variants[4].activations = true;
          variants[5].bias = false;
          variants[6].opset = 7;
          variants.push_back(base);
          variants.back().opset = 22;  // the node tests' opset
          if (std::string(op) == "LSTM") {
            variants.push_back(base);
            variants.back().peepholes = true;
            variants.push_back(base);
            variants.back().input_forget = true;
            variants.push_back(base);
            variants.back().outputs = {false, false, true};
          }
          if (std::string(op) == "GRU") {
            variants.push_back(base);
            variants.back().linear_before_reset = 1;
            variants.push_back(base);
            variants.back().linear_before_reset = 1;
            variants.back().lens = true;
          }
          variants.push_back(base);
          variants.back().lens = true;
          variants.back().runtime_lens = true;
          variants.push_back(base);
          variants.back().outputs[0] = false;  // Y_h alone
          variants.push_back(base);
          variants.back().outputs = {true, false, false};  // Y alone
          // Everything at once.
          RnnCase all = base;
          all.layout = 1;
          all.lens = true;
          all.initial = true;
          all.clip = 0.5f;
          all.peepholes = std::string(op) == "LSTM";
          all.linear_before_reset = std::string(op) == "GRU" ? 1 : -1;
          variants.push_back(all);
          for (const RnnCase& c : variants) add(c);
        }
      }
    }
  }
  return out;
}

/// Tolerance of a recurrence of `seq` steps: the dtype's, grown with the steps that carry it.
test::Tolerance rnnTolerance(DataType t, int64_t seq) {
  double scale = 1.0 + static_cast<double>(seq) / 4.0;
  if (t == DataType::kFloat) return {1e-5 * scale, 1e-5 * scale};
  if (t == DataType::kFloat16) return {2e-3 * scale, 2e-3 * scale};
  return {1.6e-2 * scale, 1.6e-2 * scale};
}

/// The node's inputs: X, W, R, B, sequence_lens, initial_h, initial_c, P; nullopt where omitted.
std::vector<std::optional<HostTensor>> inputsOf(const RnnCase& c) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  const int64_t d = c.direction == "bidirectional" ? 2 : 1;
  const int64_t gh = gatesOf(c.op) * c.hidden;
  auto random = [&](std::vector<int64_t> dims, double scale) {
    int64_t n = 1;
    for (int64_t v : dims) n *= v;
    std::vector<double> values(static_cast<size_t>(n));
    for (double& v : values) v = scale * std::uniform_real_distribution<>(-1, 1)(rng);
    return test::tensorOf(c.dtype, std::move(dims), values);
  };
  // Weights of about 1/sqrt(fan-in) keep the states in a range where every activation matters;
  // with clip, larger inputs so that the bound is reached.
  double x_scale = c.clip > 0 ? 3.0 : 1.0;
  std::vector<std::optional<HostTensor>> in(8);
  in[0] = random(c.layout == 1 ? std::vector<int64_t>{c.batch, c.seq, c.input}
                               : std::vector<int64_t>{c.seq, c.batch, c.input},
                 x_scale);
  in[1] = random({d, gh, c.input}, 1.0 / std::sqrt(static_cast<double>(c.input)));
  in[2] = random({d, gh, c.hidden}, 1.0 / std::sqrt(static_cast<double>(c.hidden)));
  if (c.bias) in[3] = random({d, 2 * gh}, 0.5);
  if (c.lens) {
    std::vector<double> lens(static_cast<size_t>(c.batch), static_cast<double>(c.seq));
    if (c.batch >= 3) {
      lens[1] = static_cast<double>((c.seq + 1) / 2);
      lens[2] = 0;
    } else {
      lens[0] = static_cast<double>(c.seq - 1);
    }
    in[4] = test::tensorOf(DataType::kInt32, {c.batch}, lens);
  }
  std::vector<int64_t> state = c.layout == 1 ? std::vector<int64_t>{c.batch, d, c.hidden}
                                             : std::vector<int64_t>{d, c.batch, c.hidden};
  if (c.initial) {
    in[5] = random(state, 1.0);
    if (c.op == "LSTM") in[6] = random(state, 1.0);
  }
  if (c.peepholes) in[7] = random({d, 3 * c.hidden}, 0.5);
  size_t count = c.op == "LSTM" ? 8 : 6;
  in.resize(count);
  while (!in.empty() && !in.back().has_value()) in.pop_back();
  return in;
}

KernelAttrs attrsOf(const RnnCase& c) {
  KernelAttrs a;
  a.ints["hidden_size"] = c.hidden;
  a.strings["direction"] = c.direction;
  if (c.opset >= 14) a.ints["layout"] = c.layout;
  if (c.clip > 0) a.floats["clip"] = c.clip;
  if (c.linear_before_reset >= 0) a.ints["linear_before_reset"] = c.linear_before_reset;
  if (c.input_forget) a.ints["input_forget"] = 1;
  if (c.activations) {
    // A list per direction (the reference kernel takes no one-direction list for two), alphas
    // and betas taken in order by the functions that have them.
    bool two = c.direction == "bidirectional";
    auto& names = a.string_lists["activations"];
    auto& alphas = a.float_lists["activation_alpha"];
    auto& betas = a.float_lists["activation_beta"];
    if (c.op == "LSTM") {
      names = {"HardSigmoid", "ScaledTanh", "Softsign"};
      alphas = {0.3f, 0.8f};
      betas = {0.45f, 1.2f};
      if (two) {
        names.insert(names.end(), {"sigmoid", "Elu", "Softplus"});
        alphas.push_back(0.7f);
      }
    } else if (c.op == "GRU") {
      names = {"hardsigmoid", "LeakyRelu"};
      alphas = {0.25f, 0.1f};
      betas = {0.5f};
      if (two) {
        names.insert(names.end(), {"Sigmoid", "ThresholdedRelu"});
        alphas.push_back(0.2f);
      }
    } else {
      names = {"Affine"};
      alphas = {0.6f};
      betas = {0.1f};
      if (two) names.push_back("Relu");
    }
  }
  return a;
}

/// Runs the node on the device with the outputs `asked` (the others left out, as a model's empty
/// output names are), each poisoned first; every input is also given as a host constant but
/// sequence_lens with runtime_lens.
StatusOr<std::vector<HostTensor>> runRnnOnDevice(const RnnCase& c,
                                                 const std::vector<std::optional<HostTensor>>& in,
                                                 const KernelAttrs& attrs,
                                                 const std::vector<HostTensor>& shapes) {
  ASSIGN_OR_RETURN(DeviceStream stream, DeviceStream::create());
  CudaKernelCall call;
  call.op = c.op;
  call.opset = c.opset;
  call.attrs = &attrs;
  std::vector<test::DeviceTensor> keep;
  keep.reserve(in.size() + shapes.size());
  for (const std::optional<HostTensor>& t : in) {
    if (!t) {
      call.inputs.emplace_back();
      call.constant_inputs.push_back(nullptr);
      continue;
    }
    ASSIGN_OR_RETURN(test::DeviceTensor dt, test::upload(*t, stream.get()));
    keep.push_back(std::move(dt));
    call.inputs.push_back(keep.back().view());
    bool runtime = c.runtime_lens && call.constant_inputs.size() == 4;
    call.constant_inputs.push_back(runtime ? nullptr : &*t);
  }
  std::vector<HostTensor> got;
  std::vector<size_t> slot;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (!c.outputs[i]) {
      call.outputs.emplace_back();
      continue;
    }
    HostTensor h = HostTensor::zeros(c.dtype, shapes[i].dims);
    ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(h.bytes.size()));
    RETURN_IF_ERROR(fillDevice(buffer.data(), 0xA5, h.bytes.size(), stream.get()));
    keep.push_back(test::DeviceTensor{std::move(buffer), h.dims, c.dtype});
    call.outputs.push_back(keep.back().mutableView());
    slot.push_back(keep.size() - 1);
    got.push_back(std::move(h));
  }
  Support support = cudaCanImplement(call);
  if (!support) return Status(StatusCode::kUnimplemented, support.reason);
  ASSIGN_OR_RETURN(size_t workspace_bytes, cudaWorkspaceBytes(call));
  ASSIGN_OR_RETURN(DeviceBuffer workspace, DeviceBuffer::allocate(workspace_bytes));
  RETURN_IF_ERROR(fillDevice(workspace.data(), 0xA5, workspace_bytes, stream.get()));
  call.workspace = workspace.data();
  call.workspace_bytes = workspace.size();
  RETURN_IF_ERROR(launchCudaKernel(call, stream.get()));
  for (size_t k = 0; k < got.size(); ++k) {
    RETURN_IF_ERROR(copyToHost(got[k].bytes.data(), keep[slot[k]].buffer.data(),
                               got[k].bytes.size(), stream.get()));
  }
  RETURN_IF_ERROR(stream.synchronize(c.op));
  return got;
}

class RnnTest : public test::CudaTest, public ::testing::WithParamInterface<RnnCase> {};

TEST_P(RnnTest, MatchesReference) {
  const RnnCase& c = GetParam();
  std::vector<std::optional<HostTensor>> in = inputsOf(c);
  KernelAttrs attrs = attrsOf(c);
  std::vector<const HostTensor*> ptrs;
  for (const auto& t : in) ptrs.push_back(t ? &*t : nullptr);
  auto expected = runReferenceKernel(c.op, c.opset, ptrs, attrs, c.outputs.size());
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  auto got = runRnnOnDevice(c, in, attrs, *expected);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  size_t k = 0;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (!c.outputs[i]) continue;
    SCOPED_TRACE(fmt::format("output {}", i));
    test::expectClose(expected->at(i), got->at(k++), rnnTolerance(c.dtype, c.seq));
  }
}

INSTANTIATE_TEST_SUITE_P(Claimed, RnnTest, ::testing::ValuesIn(rnnCases()),
                         [](const ::testing::TestParamInfo<RnnCase>& p) { return p.param.name; });

}  // namespace
}  // namespace onnxopt::kernels
