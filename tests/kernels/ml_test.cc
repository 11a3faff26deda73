// Tests of TfIdfVectorizer (kernels/reference/text.cc) and the ai.onnx.ml kernels
// (kernels/reference/ml.cc) where ONNX's node cases leave gaps: weights, IDF mode, string pools,
// skips bounded by the row, and inputs or attributes that break the ops' contracts.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/reference.h"
#include "test_tensors.h"

namespace onnxopt::kernels {
namespace {

using test::tensorOf;

std::vector<float> floatsOf(const HostTensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.get<float>(static_cast<int64_t>(i));
  return v;
}

KernelAttrs tfIdfAttrs(const std::string& mode) {
  KernelAttrs a;
  a.strings["mode"] = mode;
  a.ints = {{"min_gram_length", 1}, {"max_gram_length", 2}, {"max_skip_count", 1}};
  // unigrams 7, 8; bigrams (7, 8), (8, 9)
  a.int_lists["ngram_counts"] = {0, 2};
  a.int_lists["ngram_indexes"] = {0, 1, 2, 3};
  a.int_lists["pool_int64s"] = {7, 8, 7, 8, 8, 9};
  return a;
}

TEST(TfIdfVectorizer, CountsSkippedBigramsOnce) {
  // Row 7 8 9 8: unigram 7 once, 8 twice; (7, 8) at skip 0 and skip 2 (not allowed: max 1);
  // (8, 9) at skip 0 only; (7, 9) is not in the pool.
  HostTensor x = tensorOf(DataType::kInt32, {1, 4}, {7, 8, 9, 8});
  auto out = runReferenceKernel("TfIdfVectorizer", 9, {&x}, tfIdfAttrs("TF"), 1);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].dims, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(floatsOf((*out)[0]), (std::vector<float>{1, 2, 1, 1}));
}

TEST(TfIdfVectorizer, WeightsInIdfAndTfIdfModes) {
  HostTensor x = tensorOf(DataType::kInt64, {4}, {7, 8, 9, 8});
  KernelAttrs a = tfIdfAttrs("IDF");
  a.float_lists["weights"] = {0.5f, 2.0f, 3.0f, 4.0f};
  auto idf = runReferenceKernel("TfIdfVectorizer", 9, {&x}, a, 1);
  ASSERT_TRUE(idf.isOk()) << idf.status().message();
  EXPECT_EQ((*idf)[0].dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(floatsOf((*idf)[0]), (std::vector<float>{0.5f, 2, 3, 4}));
  a.strings["mode"] = "TFIDF";
  auto tfidf = runReferenceKernel("TfIdfVectorizer", 9, {&x}, a, 1);
  ASSERT_TRUE(tfidf.isOk()) << tfidf.status().message();
  EXPECT_EQ(floatsOf((*tfidf)[0]), (std::vector<float>{0.5f, 4, 3, 4}));
  // Without weights IDF is an indicator.
  a = tfIdfAttrs("IDF");
  auto plain = runReferenceKernel("TfIdfVectorizer", 9, {&x}, a, 1);
  ASSERT_TRUE(plain.isOk()) << plain.status().message();
  EXPECT_EQ(floatsOf((*plain)[0]), (std::vector<float>{1, 1, 1, 1}));
}

TEST(TfIdfVectorizer, StringPoolAndEmptyRows) {
  HostTensor x = HostTensor::zeros(DataType::kString, {2, 3});
  x.strings = {"a", "b", "a", "b", "b", "c"};
  KernelAttrs a;
  a.strings["mode"] = "TF";
  a.ints = {{"min_gram_length", 2}, {"max_gram_length", 2}, {"max_skip_count", 0}};
  a.int_lists["ngram_counts"] = {0, 1};
  a.int_lists["ngram_indexes"] = {1, 0};  // "a" (not counted: min 2), ("b", "c")
  a.string_lists["pool_strings"] = {"a", "b", "c"};
  auto out = runReferenceKernel("TfIdfVectorizer", 9, {&x}, a, 1);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ(floatsOf((*out)[0]), (std::vector<float>{0, 0, 1, 0}));
  HostTensor empty = HostTensor::zeros(DataType::kString, {2, 0});
  auto zero = runReferenceKernel("TfIdfVectorizer", 9, {&empty}, a, 1);
  ASSERT_TRUE(zero.isOk()) << zero.status().message();
  EXPECT_EQ((*zero)[0].dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(floatsOf((*zero)[0]), (std::vector<float>{0, 0, 0, 0}));
}

TEST(TfIdfVectorizer, RefusesBrokenContracts) {
  HostTensor x = tensorOf(DataType::kInt64, {4}, {7, 8, 9, 8});
  auto code = [&](const KernelAttrs& a, const HostTensor& in) {
    return runReferenceKernel("TfIdfVectorizer", 9, {&in}, a, 1).status().code();
  };
  KernelAttrs a = tfIdfAttrs("BM25");
  EXPECT_EQ(code(a, x), StatusCode::kInvalidArgument);
  a = tfIdfAttrs("TF");
  a.int_lists["ngram_counts"] = {0, 5};  // past the pool
  EXPECT_EQ(code(a, x), StatusCode::kInvalidArgument);
  a = tfIdfAttrs("TF");
  a.int_lists["ngram_counts"] = {0, 3};  // three bigram items
  EXPECT_EQ(code(a, x), StatusCode::kInvalidArgument);
  a = tfIdfAttrs("TF");
  a.int_lists["ngram_indexes"] = {0, 1, 2};  // too few for four n-grams
  EXPECT_EQ(code(a, x), StatusCode::kInvalidArgument);
  a = tfIdfAttrs("TF");
  a.int_lists["ngram_indexes"] = {0, 1, 2, -1};
  EXPECT_EQ(code(a, x), StatusCode::kInvalidArgument);
  a = tfIdfAttrs("TF");
  a.float_lists["weights"] = {1.0f};
  EXPECT_EQ(code(a, x), StatusCode::kInvalidArgument);
  a = tfIdfAttrs("TF");
  a.ints["min_gram_length"] = 3;  // above max_gram_length
  EXPECT_EQ(code(a, x), StatusCode::kInvalidArgument);
  a = tfIdfAttrs("TF");
  a.ints["max_skip_count"] = -1;
  EXPECT_EQ(code(a, x), StatusCode::kInvalidArgument);
  a = tfIdfAttrs("TF");
  a.string_lists["pool_strings"] = {"a"};  // both pools
  EXPECT_EQ(code(a, x), StatusCode::kInvalidArgument);
  a.int_lists.erase("pool_int64s");  // a string pool for an integer input
  EXPECT_EQ(code(a, x), StatusCode::kInvalidArgument);
  HostTensor cube = tensorOf(DataType::kInt64, {1, 1, 4}, {7, 8, 9, 8});
  EXPECT_EQ(code(tfIdfAttrs("TF"), cube), StatusCode::kInvalidArgument);
  HostTensor no_rows = tensorOf(DataType::kInt64, {0, 4}, {});
  EXPECT_EQ(code(tfIdfAttrs("TF"), no_rows), StatusCode::kInvalidArgument);
  HostTensor floats = tensorOf(DataType::kFloat, {4}, {7, 8, 9, 8});
  EXPECT_EQ(code(tfIdfAttrs("TF"), floats), StatusCode::kUnimplemented);
}

TEST(TfIdfVectorizer, HugeSkipCountsAreBoundedByTheRow) {
  HostTensor x = tensorOf(DataType::kInt64, {4}, {7, 8, 9, 8});
  KernelAttrs a = tfIdfAttrs("TF");
  a.ints["max_skip_count"] = int64_t{1} << 62;
  auto out = runReferenceKernel("TfIdfVectorizer", 9, {&x}, a, 1);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ(floatsOf((*out)[0]), (std::vector<float>{1, 2, 2, 1}));  // (7, 8) at skip 0 and 2
}

}  // namespace
}  // namespace onnxopt::kernels
