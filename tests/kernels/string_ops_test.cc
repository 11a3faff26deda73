// Tests of the string kernels (kernels/reference/string_ops.cc) where ONNX's node cases leave gaps:
// maxsplit with whitespace splitting, case-insensitive stopwords, bad shapes, bad attributes and
// non-string inputs.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels {
namespace {

HostTensor strings(std::vector<int64_t> dims, std::vector<std::string> values) {
  HostTensor t = HostTensor::zeros(DataType::kString, std::move(dims));
  t.strings = std::move(values);
  return t;
}

StatusOr<std::vector<HostTensor>> run(const std::string& op, std::vector<const HostTensor*> ins,
                                      const KernelAttrs& attrs = {}, size_t outputs = 1) {
  return runReferenceKernel(op, 20, ins, attrs, outputs);
}

TEST(StringSplit, WhitespaceWithMaxsplitKeepsTheRest) {
  HostTensor x = strings({3}, {"  a b  c ", "", "one"});
  KernelAttrs attrs;
  attrs.ints["maxsplit"] = 1;
  auto out = run("StringSplit", {&x}, attrs, 2);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].dims, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ((*out)[0].strings, (std::vector<std::string>{"a", "b  c ", "", "", "one", ""}));
  EXPECT_EQ((*out)[1].get<int64_t>(0), 2);
  EXPECT_EQ((*out)[1].get<int64_t>(1), 0);
  EXPECT_EQ((*out)[1].get<int64_t>(2), 1);
}

TEST(StringSplit, MultiCharacterDelimiter) {
  HostTensor x = strings({1}, {"a--b----c"});
  KernelAttrs attrs;
  attrs.strings["delimiter"] = "--";
  auto out = run("StringSplit", {&x}, attrs, 2);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].strings, (std::vector<std::string>{"a", "b", "", "c"}));
}

TEST(StringNormalizer, CaseInsensitiveStopwordsAndLower) {
  HostTensor x = strings({1, 3}, {"MONDAY", "Tuesday", "wed"});
  KernelAttrs attrs;
  attrs.strings["case_change_action"] = "LOWER";
  attrs.string_lists["stopwords"] = {"monday"};
  auto out = run("StringNormalizer", {&x}, attrs);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].dims, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ((*out)[0].strings, (std::vector<std::string>{"tuesday", "wed"}));
}

TEST(StringNormalizer, RefusesBadShapesAndActions) {
  HostTensor x = strings({2, 2}, {"a", "b", "c", "d"});
  EXPECT_EQ(run("StringNormalizer", {&x}).status().code(), StatusCode::kInvalidArgument);
  HostTensor y = strings({1}, {"a"});
  KernelAttrs attrs;
  attrs.strings["case_change_action"] = "TITLE";
  EXPECT_EQ(run("StringNormalizer", {&y}, attrs).status().code(), StatusCode::kInvalidArgument);
}

TEST(StringConcat, BroadcastsAndRefusesIncompatibleShapes) {
  HostTensor a = strings({2, 1}, {"x", "y"});
  HostTensor b = strings({3}, {"1", "2", "3"});
  auto out = run("StringConcat", {&a, &b});
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].strings, (std::vector<std::string>{"x1", "x2", "x3", "y1", "y2", "y3"}));
  HostTensor c = strings({2}, {"p", "q"});
  EXPECT_EQ(run("StringConcat", {&b, &c}).status().code(), StatusCode::kInvalidArgument);
}

TEST(StringKernels, RefuseNonStringInputs) {
  HostTensor f = HostTensor::zeros(DataType::kFloat, {2});
  EXPECT_EQ(run("StringConcat", {&f, &f}).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(run("StringSplit", {&f}, {}, 2).status().code(), StatusCode::kUnimplemented);
}

TEST(RegexFullMatch, MatchesWholeStringsAndNeedsAPattern) {
  HostTensor x = strings({3}, {"abc", "abcd", ""});
  KernelAttrs attrs;
  attrs.strings["pattern"] = "a.c";
  auto out = run("RegexFullMatch", {&x}, attrs);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ((*out)[0].bytes, std::string("\1\0\0", 3));
  EXPECT_EQ(run("RegexFullMatch", {&x}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace onnxopt::kernels
