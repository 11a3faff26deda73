// The Generator over the CUDA executor, on the host-memory fake device (fake_device.h, which runs
// the reference kernels): the same interface as the reference runner, so the same ids for each
// tiny decoder of models/decoders, a batch of two rows included. Each step has a new past length,
// so each is a new plan; the prefill's past is empty ([batch, heads, 0, head_dim]).
#include <gtest/gtest.h>

#include "fake_device.h"
#include "model_feeds.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/generator.h"
#include "onnxopt/runtime/reference_executor.h"

namespace onnxopt::runtime {
namespace {

/// The sequences `executor` generates greedily from `prompt`, or the error.
StatusOr<std::vector<std::vector<int64_t>>> generateWith(const ir::Model& model,
                                                         std::unique_ptr<Executor> executor,
                                                         const Prompt& prompt) {
  GenerationOptions options;
  options.max_new_tokens = 12;
  ASSIGN_OR_RETURN(std::unique_ptr<Generator> generator,
                   Generator::create(model, std::move(executor), options));
  return generator->generate(prompt);
}

TEST(GeneratorOnFakeDevice, DecodersGiveTheReferenceIds) {
  const Prompt prompt{{{170, 173, 168, 245, 182}, {114, 140, 197, 133, 126}}, {}};
  for (const char* name : {"llama", "qwen2", "phi", "gptj"}) {
    SCOPED_TRACE(name);
    auto model = test::loadInferred(fmt::format("models/decoders/{}_kv_dynamo/model.onnx", name));
    ASSERT_TRUE(model);
    auto log = std::make_shared<test::FakeDeviceLog>();
    auto cuda = CudaExecutor::createOn(*model, {}, std::make_unique<test::FakeDevice>(log));
    ASSERT_TRUE(cuda.isOk()) << cuda.status().toString();
    auto on_device = generateWith(*model, std::move(cuda).value(), prompt);
    ASSERT_TRUE(on_device.isOk()) << on_device.status().toString();
    auto on_host = generateWith(*model, createReferenceExecutor(*model), prompt);
    ASSERT_TRUE(on_host.isOk()) << on_host.status().toString();
    EXPECT_EQ(*on_device, *on_host);
    EXPECT_EQ(on_device->at(0).size(), 5u + 12u);
    EXPECT_GT(log->launches, 0);
    EXPECT_TRUE(log->errors.empty()) << log->errors.front();
  }
}

}  // namespace
}  // namespace onnxopt::runtime
