// Tests of TfIdfVectorizer (kernels/reference/text.cc) and the ai.onnx.ml kernels
// (kernels/reference/ml.cc) where ONNX's node cases leave gaps: weights, IDF mode, string pools,
// skips bounded by the row, and inputs or attributes that break the ops' contracts.
#include <cmath>
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

const std::string kMl = "ai.onnx.ml.";

StatusOr<std::vector<HostTensor>> runMl(const std::string& op, int64_t opset,
                                        std::vector<const HostTensor*> ins,
                                        const KernelAttrs& attrs = {}) {
  return runReferenceKernel(kMl + op, opset, ins, attrs, 1);
}

TEST(Binarizer, ThresholdOnFloatsAndIntegers) {
  HostTensor x = tensorOf(DataType::kInt32, {4}, {-1, 0, 1, 2});
  KernelAttrs a;
  a.floats["threshold"] = 0.5f;
  auto out = runMl("Binarizer", 1, {&x}, a);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].dtype, DataType::kInt32);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ((*out)[0].get<int32_t>(i), i >= 2 ? 1 : 0) << i;
  HostTensor f = tensorOf(DataType::kFloat, {2}, {0.5, std::nan("")});
  auto fo = runMl("Binarizer", 1, {&f}, a);
  ASSERT_TRUE(fo.isOk());
  EXPECT_EQ(floatsOf((*fo)[0]), (std::vector<float>{0, 0}));
  HostTensor u = tensorOf(DataType::kUint8, {1}, {1});
  EXPECT_EQ(runMl("Binarizer", 1, {&u}).status().code(), StatusCode::kUnimplemented);
}

TEST(ArrayFeatureExtractor, VectorInputGivesOneRowAndIndicesAreChecked) {
  HostTensor x = HostTensor::zeros(DataType::kString, {3});
  x.strings = {"a", "b", "c"};
  HostTensor y = tensorOf(DataType::kInt64, {2}, {2, 0});
  auto out = runMl("ArrayFeatureExtractor", 1, {&x, &y});
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].dims, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ((*out)[0].strings, (std::vector<std::string>{"c", "a"}));
  HostTensor bad = tensorOf(DataType::kInt64, {1}, {3});
  EXPECT_EQ(runMl("ArrayFeatureExtractor", 1, {&x, &bad}).status().code(),
            StatusCode::kInvalidArgument);
  HostTensor neg = tensorOf(DataType::kInt64, {1}, {-1});
  EXPECT_EQ(runMl("ArrayFeatureExtractor", 1, {&x, &neg}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(LabelEncoder, FloatKeysMatchNaNAndSignedZero) {
  HostTensor x = tensorOf(DataType::kFloat, {3}, {std::nan(""), -0.0, 7});
  KernelAttrs a;
  a.float_lists["keys_floats"] = {std::nanf(""), 0.0f};
  a.string_lists["values_strings"] = {"nan", "zero"};
  auto out = runMl("LabelEncoder", 2, {&x}, a);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].strings, (std::vector<std::string>{"nan", "zero", "_Unused"}));
}

TEST(LabelEncoder, OpsetOneMapsBothWays) {
  KernelAttrs a;
  a.string_lists["classes_strings"] = {"x", "y"};
  a.ints["default_int64"] = 9;
  HostTensor s = HostTensor::zeros(DataType::kString, {2});
  s.strings = {"y", "z"};
  auto ids = runMl("LabelEncoder", 1, {&s}, a);
  ASSERT_TRUE(ids.isOk()) << ids.status().message();
  EXPECT_EQ((*ids)[0].get<int64_t>(0), 1);
  EXPECT_EQ((*ids)[0].get<int64_t>(1), 9);
  HostTensor i = tensorOf(DataType::kInt64, {2}, {0, 5});
  auto names = runMl("LabelEncoder", 1, {&i}, a);
  ASSERT_TRUE(names.isOk()) << names.status().message();
  EXPECT_EQ((*names)[0].strings, (std::vector<std::string>{"x", "_Unused"}));
}

TEST(LabelEncoder, TensorDefaultsAndBrokenContracts) {
  HostTensor x = tensorOf(DataType::kInt64, {2}, {1, 2});
  KernelAttrs a;
  a.int_lists["keys_int64s"] = {1};
  a.tensors["values_tensor"] = tensorOf(DataType::kDouble, {1}, {0.25});
  auto out = runMl("LabelEncoder", 4, {&x}, a);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].dtype, DataType::kDouble);
  EXPECT_EQ((*out)[0].get<double>(0), 0.25);
  EXPECT_TRUE(std::signbit((*out)[0].get<double>(1)));                 // -0 by default
  a.tensors["default_tensor"] = tensorOf(DataType::kFloat, {1}, {3});  // not the values' type
  EXPECT_EQ(runMl("LabelEncoder", 4, {&x}, a).status().code(), StatusCode::kInvalidArgument);
  KernelAttrs both = a;
  both.tensors.erase("default_tensor");
  both.float_lists["values_floats"] = {1};
  EXPECT_EQ(runMl("LabelEncoder", 4, {&x}, both).status().code(), StatusCode::kInvalidArgument);
  KernelAttrs uneven;
  uneven.int_lists["keys_int64s"] = {1, 2};
  uneven.int_lists["values_int64s"] = {1};
  EXPECT_EQ(runMl("LabelEncoder", 2, {&x}, uneven).status().code(), StatusCode::kInvalidArgument);
  KernelAttrs other;
  other.string_lists["keys_strings"] = {"1"};
  other.int_lists["values_int64s"] = {1};
  EXPECT_EQ(runMl("LabelEncoder", 2, {&x}, other).status().code(), StatusCode::kInvalidArgument);
}

/// One tree: x0 <= 1 ? leaf 0 : (x1 in {2, 3} ? leaf 1 : leaf 2), leaves on targets 0, 1, 1;
/// and a second tree that is a single leaf 3 (target 0).
KernelAttrs twoTrees() {
  KernelAttrs a;
  a.tensors["nodes_modes"] = tensorOf(DataType::kUint8, {3}, {0, 6, 0});
  a.tensors["nodes_splits"] = tensorOf(DataType::kFloat, {3}, {1, 0, 0});
  a.tensors["membership_values"] = tensorOf(DataType::kFloat, {3}, {2, 3, std::nan("")});
  a.tensors["leaf_weights"] = tensorOf(DataType::kFloat, {4}, {1, 2, 4, 8});
  a.int_lists = {{"nodes_featureids", {0, 1, 0}},
                 {"nodes_truenodeids", {0, 1, 3}},
                 {"nodes_falsenodeids", {1, 2, 3}},
                 {"nodes_trueleafs", {1, 1, 1}},
                 {"nodes_falseleafs", {0, 1, 1}},
                 {"leaf_targetids", {0, 1, 1, 0}},
                 {"tree_roots", {0, 2}}};
  a.ints["n_targets"] = 2;
  return a;
}

TEST(TreeEnsemble, AggregatesAndSetMembership) {
  HostTensor x = tensorOf(DataType::kFloat, {3, 2}, {0, 0, 5, 3, 5, 4});
  auto sum = runMl("TreeEnsemble", 5, {&x}, twoTrees());
  ASSERT_TRUE(sum.isOk()) << sum.status().message();
  EXPECT_EQ(floatsOf((*sum)[0]), (std::vector<float>{9, 0, 8, 2, 8, 4}));
  KernelAttrs a = twoTrees();
  a.ints["aggregate_function"] = 0;  // AVERAGE over the two trees
  auto avg = runMl("TreeEnsemble", 5, {&x}, a);
  ASSERT_TRUE(avg.isOk());
  EXPECT_EQ(floatsOf((*avg)[0]), (std::vector<float>{4.5f, 0, 4, 1, 4, 2}));
  a.ints["aggregate_function"] = 2;  // MIN; a target no leaf reached stays 0
  auto mn = runMl("TreeEnsemble", 5, {&x}, a);
  ASSERT_TRUE(mn.isOk());
  EXPECT_EQ(floatsOf((*mn)[0]), (std::vector<float>{1, 0, 8, 2, 8, 4}));
}

TEST(TreeEnsemble, MissingValuesAndPostTransforms) {
  HostTensor x = tensorOf(DataType::kDouble, {1, 2}, {std::nan(""), 0});
  KernelAttrs a = twoTrees();
  auto plain = runMl("TreeEnsemble", 5, {&x}, a);
  ASSERT_TRUE(plain.isOk());
  EXPECT_EQ((*plain)[0].get<double>(0), 8);  // NaN <= 1 is false, and 0 is not in {2, 3}
  EXPECT_EQ((*plain)[0].get<double>(1), 4);
  a.int_lists["nodes_missing_value_tracks_true"] = {1, 0, 0};
  a.ints["post_transform"] = 2;  // LOGISTIC
  auto logistic = runMl("TreeEnsemble", 5, {&x}, a);
  ASSERT_TRUE(logistic.isOk());
  EXPECT_NEAR((*logistic)[0].get<double>(0), 1 / (1 + std::exp(-9.0)), 1e-12);
  EXPECT_NEAR((*logistic)[0].get<double>(1), 0.5, 1e-12);
  a.ints["post_transform"] = 1;  // SOFTMAX
  auto softmax = runMl("TreeEnsemble", 5, {&x}, a);
  ASSERT_TRUE(softmax.isOk());
  EXPECT_NEAR((*softmax)[0].get<double>(0), 1 / (1 + std::exp(-9.0)), 1e-12);
  a.ints["post_transform"] = 3;  // SOFTMAX_ZERO: the zero score stays zero
  auto zero = runMl("TreeEnsemble", 5, {&x}, a);
  ASSERT_TRUE(zero.isOk());
  EXPECT_NEAR((*zero)[0].get<double>(0), 1, 1e-12);
  EXPECT_EQ((*zero)[0].get<double>(1), 0);
  HostTensor p = tensorOf(DataType::kDouble, {1, 2}, {5, 0});
  KernelAttrs probit = twoTrees();
  probit.tensors["leaf_weights"] = tensorOf(DataType::kFloat, {4}, {0, 0.5, 0.5, 0.975});
  probit.ints["post_transform"] = 4;  // PROBIT of 0.975 (target 0) and 0.5 (target 1)
  auto pr = runMl("TreeEnsemble", 5, {&p}, probit);
  ASSERT_TRUE(pr.isOk());
  EXPECT_NEAR((*pr)[0].get<double>(0), 1.959963984540054, 1e-6);  // float 0.975
  EXPECT_NEAR((*pr)[0].get<double>(1), 0, 1e-12);
}

TEST(TreeEnsemble, RefusesBrokenTrees) {
  HostTensor x = tensorOf(DataType::kFloat, {1, 2}, {0, 0});
  auto code = [&](const KernelAttrs& a) {
    return runMl("TreeEnsemble", 5, {&x}, a).status().code();
  };
  KernelAttrs a = twoTrees();
  a.int_lists["nodes_featureids"] = {0, 2, 0};  // X has two features
  EXPECT_EQ(code(a), StatusCode::kInvalidArgument);
  a = twoTrees();
  a.int_lists["nodes_truenodeids"] = {0, 1, 4};  // four leaves
  EXPECT_EQ(code(a), StatusCode::kInvalidArgument);
  a = twoTrees();
  a.int_lists["nodes_trueleafs"] = {0, 1, 1};  // node 0 -> node 0: a cycle
  EXPECT_EQ(code(a), StatusCode::kInvalidArgument);
  a = twoTrees();
  a.tensors["membership_values"] = tensorOf(DataType::kFloat, {2}, {2, 3});  // no NaN ends the set
  EXPECT_EQ(code(a), StatusCode::kInvalidArgument);
  a = twoTrees();
  a.int_lists["leaf_targetids"] = {0, 1, 2, 0};
  EXPECT_EQ(code(a), StatusCode::kInvalidArgument);
  a = twoTrees();
  a.tensors["nodes_modes"] = tensorOf(DataType::kUint8, {3}, {0, 7, 0});
  EXPECT_EQ(code(a), StatusCode::kInvalidArgument);
  a = twoTrees();
  a.ints["aggregate_function"] = 4;
  EXPECT_EQ(code(a), StatusCode::kInvalidArgument);
  a = twoTrees();
  a.int_lists["tree_roots"] = {3};
  EXPECT_EQ(code(a), StatusCode::kInvalidArgument);
  HostTensor flat = tensorOf(DataType::kFloat, {2}, {0, 0});
  EXPECT_EQ(runMl("TreeEnsemble", 5, {&flat}, twoTrees()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(Normalizer, RowsByMaxL1AndL2) {
  HostTensor x = tensorOf(DataType::kInt64, {2, 2}, {3, -4, 0, 0});
  KernelAttrs a;
  a.strings["norm"] = "L2";
  auto l2 = runMl("Normalizer", 1, {&x}, a);
  ASSERT_TRUE(l2.isOk()) << l2.status().message();
  EXPECT_EQ(floatsOf((*l2)[0]), (std::vector<float>{0.6f, -0.8f, 0, 0}));  // zero rows stay
  a.strings["norm"] = "L1";
  auto l1 = runMl("Normalizer", 1, {&x}, a);
  ASSERT_TRUE(l1.isOk());
  EXPECT_NEAR(floatsOf((*l1)[0])[1], -4.0f / 7, 1e-6);
  a.strings["norm"] = "MAX";  // the largest value, not the largest magnitude
  auto mx = runMl("Normalizer", 1, {&x}, a);
  ASSERT_TRUE(mx.isOk());
  EXPECT_EQ(floatsOf((*mx)[0]), (std::vector<float>{1, -4.0f / 3, 0, 0}));
  a.strings["norm"] = "L3";
  EXPECT_EQ(runMl("Normalizer", 1, {&x}, a).status().code(), StatusCode::kInvalidArgument);
  HostTensor cube = tensorOf(DataType::kFloat, {1, 1, 2}, {1, 2});
  EXPECT_EQ(runMl("Normalizer", 1, {&cube}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Scaler, PerColumnOrBroadcastAndRefusesOtherLengths) {
  HostTensor x = tensorOf(DataType::kInt32, {2, 2}, {1, 2, 3, 4});
  KernelAttrs a;
  a.float_lists["offset"] = {1, 2};
  a.float_lists["scale"] = {2};
  auto out = runMl("Scaler", 1, {&x}, a);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].dtype, DataType::kFloat);
  EXPECT_EQ(floatsOf((*out)[0]), (std::vector<float>{0, 0, 4, 4}));
  a.float_lists["offset"] = {1, 2, 3};
  EXPECT_EQ(runMl("Scaler", 1, {&x}, a).status().code(), StatusCode::kInvalidArgument);
}

TEST(Imputer, ReplacesNaNOrAValueAndChecksLists) {
  HostTensor x = tensorOf(DataType::kFloat, {2, 2}, {std::nan(""), 1, 2, std::nan("")});
  KernelAttrs a;
  a.float_lists["imputed_value_floats"] = {7, 8};
  a.floats["replaced_value_float"] = std::nanf("");
  auto out = runMl("Imputer", 1, {&x}, a);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ(floatsOf((*out)[0]), (std::vector<float>{7, 1, 2, 8}));
  a.float_lists["imputed_value_floats"] = {7, 8, 9};
  EXPECT_EQ(runMl("Imputer", 1, {&x}, a).status().code(), StatusCode::kInvalidArgument);
  HostTensor i = tensorOf(DataType::kInt64, {2}, {0, 3});
  KernelAttrs none;
  EXPECT_EQ(runMl("Imputer", 1, {&i}, none).status().code(), StatusCode::kInvalidArgument);
  none.int_lists["imputed_value_int64s"] = {9};
  auto ints = runMl("Imputer", 1, {&i}, none);
  ASSERT_TRUE(ints.isOk());
  EXPECT_EQ((*ints)[0].get<int64_t>(0), 9);
  EXPECT_EQ((*ints)[0].get<int64_t>(1), 3);
}

TEST(OneHotEncoder, UnknownValuesAreZerosOrRefused) {
  HostTensor x = tensorOf(DataType::kInt32, {2}, {3, 4});
  KernelAttrs a;
  a.int_lists["cats_int64s"] = {3, 5};
  auto out = runMl("OneHotEncoder", 1, {&x}, a);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(floatsOf((*out)[0]), (std::vector<float>{1, 0, 0, 0}));
  a.ints["zeros"] = 0;
  EXPECT_EQ(runMl("OneHotEncoder", 1, {&x}, a).status().code(), StatusCode::kInvalidArgument);
  KernelAttrs strings_only;
  strings_only.string_lists["cats_strings"] = {"3"};
  EXPECT_EQ(runMl("OneHotEncoder", 1, {&x}, strings_only).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(FeatureVectorizer, CutsAndPadsEachInput) {
  HostTensor a = tensorOf(DataType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor b = tensorOf(DataType::kInt64, {2}, {7, 8});  // a vector is one column
  KernelAttrs attrs;
  attrs.int_lists["inputdimensions"] = {2, 2};
  auto out = runMl("FeatureVectorizer", 1, {&a, &b}, attrs);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].dims, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(floatsOf((*out)[0]), (std::vector<float>{1, 2, 7, 0, 4, 5, 8, 0}));
  HostTensor c = tensorOf(DataType::kFloat, {3, 1}, {1, 2, 3});
  EXPECT_EQ(runMl("FeatureVectorizer", 1, {&a, &c}, attrs).status().code(),
            StatusCode::kInvalidArgument);
  attrs.int_lists["inputdimensions"] = {2};
  EXPECT_EQ(runMl("FeatureVectorizer", 1, {&a, &b}, attrs).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(LinearRegressor, TargetsInterceptsAndShapes) {
  HostTensor x = tensorOf(DataType::kDouble, {1, 2}, {1, 2});
  KernelAttrs a;
  a.float_lists["coefficients"] = {1, 1, 2, -1};
  a.float_lists["intercepts"] = {0.5, 0};
  a.ints["targets"] = 2;
  auto out = runMl("LinearRegressor", 1, {&x}, a);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ(floatsOf((*out)[0]), (std::vector<float>{3.5f, 0}));
  a.ints["targets"] = 3;
  EXPECT_EQ(runMl("LinearRegressor", 1, {&x}, a).status().code(), StatusCode::kInvalidArgument);
  a.ints["targets"] = 2;
  a.strings["post_transform"] = "EXP";
  EXPECT_EQ(runMl("LinearRegressor", 1, {&x}, a).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace onnxopt::kernels
