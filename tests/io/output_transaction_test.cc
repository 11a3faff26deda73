// OutputTransaction: staged files are invisible until commit, and a commit that fails part-way puts
// back what it had replaced.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"

namespace onnxopt::io {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "onnxopt_commit_test.XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path path() const { return path_; }

 private:
  fs::path path_;
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t countEntries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(OutputTransactionTest, NothingVisibleBeforeCommit) {
  TempDir dir;
  std::ofstream(dir.path() / "a") << "old a";
  {
    OutputTransaction t;
    ASSERT_TRUE(t.addFile((dir.path() / "a").string(), "new a").isOk());
    ASSERT_TRUE(t.addFile((dir.path() / "b").string(), "new b").isOk());
    EXPECT_EQ(read(dir.path() / "a"), "old a");
    EXPECT_FALSE(fs::exists(dir.path() / "b"));
  }  // not committed: the staged files go
  EXPECT_EQ(read(dir.path() / "a"), "old a");
  EXPECT_EQ(countEntries(dir.path()), 1u);
}

TEST(OutputTransactionTest, FailedCommitRestoresEarlierFiles) {
  TempDir dir;
  std::ofstream(dir.path() / "a") << "old a";
  OutputTransaction t;
  ASSERT_TRUE(t.addFile((dir.path() / "a").string(), "new a").isOk());
  ASSERT_TRUE(t.addFile((dir.path() / "new").string(), "new file").isOk());
  ASSERT_TRUE(t.addFile((dir.path() / "c").string(), "new c").isOk());
  // The last rename fails: "c" became a non-empty folder after staging.
  fs::create_directories(dir.path() / "c" / "inside");
  Status st = t.commit();
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("c"), std::string::npos);
  EXPECT_EQ(read(dir.path() / "a"), "old a");    // replaced, then put back
  EXPECT_FALSE(fs::exists(dir.path() / "new"));  // created, then removed
  EXPECT_TRUE(fs::is_directory(dir.path() / "c" / "inside"));
}

TEST(OutputTransactionTest, CommitReplacesAndCleansUp) {
  TempDir dir;
  std::ofstream(dir.path() / "a") << "old a";
  OutputTransaction t;
  std::string long_name(250, 'n');
  ASSERT_TRUE(t.addFile((dir.path() / "a").string(), "new a").isOk());
  ASSERT_TRUE(t.addFile((dir.path() / long_name).string(), "long").isOk());
  ASSERT_TRUE(t.commit().isOk());
  EXPECT_EQ(read(dir.path() / "a"), "new a");
  EXPECT_EQ(read(dir.path() / long_name), "long");
  EXPECT_EQ(countEntries(dir.path()), 2u);  // no staging folder or backup left
}

TEST(OutputTransactionTest, BadTargetsFailBeforeWriting) {
  TempDir dir;
  fs::create_directories(dir.path() / "folder");
  OutputTransaction t;
  EXPECT_FALSE(t.addFile((dir.path() / "folder").string(), "x").isOk());
  EXPECT_FALSE(t.addFile((dir.path() / "missing" / "f").string(), "x").isOk());
  EXPECT_FALSE(
      checkOutputPath((dir.path() / "m.onnx").string(), (dir.path() / "m.onnx").string()).isOk());
  EXPECT_EQ(countEntries(dir.path()), 1u);
}

}  // namespace
}  // namespace onnxopt::io
