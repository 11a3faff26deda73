// The tuning cache file (kernels/tuning_cache.h): entries survive a reopen, later lines win, a
// line cut short is ignored, and files that are not caches are errors naming the file.
#include "onnxopt/kernels/tuning_cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace onnxopt::kernels {
namespace {

namespace fs = std::filesystem;

class TuningCacheFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("onnxopt_tuning_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  static void write(const std::string& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  }
  fs::path dir_;
};

TEST_F(TuningCacheFile, EntriesSurviveAReopenAndTheLastLineWins) {
  std::string p = path("cache.txt");
  auto cache = TuningCache::open(p);
  ASSERT_TRUE(cache.isOk()) << cache.status().toString();
  EXPECT_EQ((*cache)->size(), 0u);
  EXPECT_FALSE(fs::exists(p));  // nothing written until a record
  ASSERT_TRUE((*cache)->record("conv|a", "algo=1").isOk());
  ASSERT_TRUE((*cache)->record("conv|b", "algo=2").isOk());
  ASSERT_TRUE((*cache)->record("conv|a", "algo=3").isOk());
  EXPECT_EQ((*cache)->find("conv|a"), "algo=3");
  auto again = TuningCache::open(p);
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ((*again)->size(), 2u);
  EXPECT_EQ((*again)->find("conv|a"), "algo=3");
  EXPECT_EQ((*again)->find("conv|b"), "algo=2");
  EXPECT_FALSE((*again)->find("conv|c").has_value());
}

TEST_F(TuningCacheFile, ALastLineCutShortIsIgnored) {
  std::string p = path("cut.txt");
  write(p, "# onnxopt tuning cache v1\nk1\tv1\nk2\tv");
  auto cache = TuningCache::open(p);
  ASSERT_TRUE(cache.isOk()) << cache.status().toString();
  EXPECT_EQ((*cache)->find("k1"), "v1");
  EXPECT_FALSE((*cache)->find("k2").has_value());
}

TEST_F(TuningCacheFile, OtherFilesAreErrorsNamingThem) {
  std::string p = path("model.onnx");
  write(p, "\x08\x07\x12\x04junk\n");
  auto cache = TuningCache::open(p);
  ASSERT_FALSE(cache.isOk());
  EXPECT_NE(cache.status().message().find(p + ": not an onnxopt tuning cache"), std::string::npos)
      << cache.status().message();
  std::string bad = path("bad.txt");
  write(bad, "# onnxopt tuning cache v1\nno tab here\n");
  cache = TuningCache::open(bad);
  ASSERT_FALSE(cache.isOk());
  EXPECT_NE(cache.status().message().find(bad + ":2: not a tuning cache entry"), std::string::npos)
      << cache.status().message();
  // A folder is not readable as a file.
  cache = TuningCache::open(dir_.string());
  EXPECT_FALSE(cache.isOk());
}

TEST_F(TuningCacheFile, KeysAndValuesStayOnOneLine) {
  auto cache = TuningCache::open(path("c.txt"));
  ASSERT_TRUE(cache.isOk());
  EXPECT_FALSE((*cache)->record("a\tb", "v").isOk());
  EXPECT_FALSE((*cache)->record("a", "v\nw").isOk());
  EXPECT_FALSE((*cache)->record("", "v").isOk());
}

}  // namespace
}  // namespace onnxopt::kernels
