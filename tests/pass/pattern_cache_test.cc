// PatternPass shares one pattern list per (pass id, options) across runs and threads: runs with
// other option values in the same process must still get their own patterns.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "onnxopt/api/optimize.h"
#include "onnxopt/io/model_io.h"

namespace onnxopt {
namespace {

// x + (+0) is x only where a -0 may become +0: eliminate-noop removes it with
// strict-signed-zero=false and keeps it with the (strict) default.
constexpr char kModel[] = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (float[4] y) <float zero = {0.0}> { t = Add(x, zero)
 y = Relu(t) }
)";

size_t nodesAfter(const std::string& pipeline) {
  auto model = io::parseModelText(kModel);
  EXPECT_TRUE(model.isOk());
  OptimizeOptions options;
  options.pipeline = pipeline;
  Status st = optimize(**model, options);
  EXPECT_TRUE(st.isOk()) << st.message();
  return (*model)->graph->numNodes();
}

TEST(PatternCache, OptionValuesGetTheirOwnPatterns) {
  const std::string strict = "eliminate-noop,dce";
  const std::string loose = "eliminate-noop{strict-signed-zero=false},dce";
  // Each order, so that neither is the first to build the shared list.
  EXPECT_EQ(nodesAfter(strict), 2u);
  EXPECT_EQ(nodesAfter(loose), 1u);
  EXPECT_EQ(nodesAfter(strict), 2u);
  EXPECT_EQ(nodesAfter(loose), 1u);
}

TEST(PatternCache, ThreadsShareTheListsSafely) {
  std::vector<std::thread> threads;
  std::vector<size_t> got(8);
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      size_t n = 0;
      for (int k = 0; k < 20; ++k) {
        n += nodesAfter(i % 2 ? "eliminate-noop{strict-signed-zero=false},dce"
                              : "eliminate-noop,dce");
      }
      got[i] = n;
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], i % 2 ? 20u : 40u) << i;
}

}  // namespace
}  // namespace onnxopt
