#include "onnxopt/support/diagnostics.h"

#include <sstream>

#include <gtest/gtest.h>

namespace onnxopt {
namespace {

TEST(DiagnosticsTest, FormatsToolSeverityAndMessage) {
  EXPECT_STREQ(severityName(Severity::kNote), "note");
  EXPECT_STREQ(severityName(Severity::kWarning), "warning");
  Diagnostic warning{Severity::kWarning, "y", "not folding Add 'y': bad"};
  EXPECT_EQ(formatDiagnostic(warning), "opt: warning: not folding Add 'y': bad");
  Diagnostic note{Severity::kNote, "", "2 graph inputs are constants"};
  EXPECT_EQ(formatDiagnostic(note, "opt-test"), "opt-test: note: 2 graph inputs are constants");
}

TEST(DiagnosticsTest, StreamSinkWritesOneLinePerDiagnostic) {
  std::ostringstream out;
  StreamDiagnosticSink sink(out);
  sink.report({Severity::kWarning, "", "fixpoint(cse,dce) did not converge"});
  sink.report({Severity::kNote, "", "reproduce"});
  EXPECT_EQ(out.str(), "opt: warning: fixpoint(cse,dce) did not converge\nopt: note: reproduce\n");
}

TEST(DiagnosticsTest, StreamSinkEscapesControlCharactersOfNames) {
  std::ostringstream out;
  StreamDiagnosticSink sink(out);
  // A name from the model cannot start a line of its own or end one early.
  sink.report({Severity::kWarning, "a\nopt: error: forged",
               "not folding Add 'a\nopt: error: forged': bad\tinput\x01"});
  sink.report({Severity::kWarning, "b\n", "name 'b\n"});
  EXPECT_EQ(out.str(),
            "opt: warning: not folding Add 'a\\nopt: error: forged': bad\\tinput\\x01\n"
            "opt: warning: name 'b\\n\n");
}

TEST(DiagnosticsTest, StreamSinkEscapesBytesThatAreNotUtf8) {
  std::ostringstream out;
  StreamDiagnosticSink sink(out);
  // A corrupted model's names may hold any bytes: the line stays decodable, valid UTF-8 is kept.
  sink.report({Severity::kWarning, "",
               "input 'in\xae' and '\xe2\x82' and '\xed\xa0\x80' of 'caf\xc3\xa9 \xe2\x82\xac'"});
  EXPECT_EQ(out.str(),
            "opt: warning: input 'in\\xae' and '\\xe2\\x82' and '\\xed\\xa0\\x80' of 'caf\xc3\xa9 "
            "\xe2\x82\xac'\n");
  EXPECT_EQ(escapeControlChars(escapeControlChars("a\xff\nb")), "a\\xff\\nb");
}

TEST(DiagnosticsTest, StreamSinkTakesAnotherToolName) {
  std::ostringstream out;
  StreamDiagnosticSink sink(out, "mytool");
  sink.report({Severity::kWarning, "", "m"});
  EXPECT_EQ(out.str(), "mytool: warning: m\n");
}

TEST(DiagnosticsTest, CollectingSinkKeepsEveryDiagnosticInOrder) {
  CollectingDiagnosticSink sink;
  EXPECT_TRUE(sink.diagnostics().empty());
  // Collected text is not escaped: the caller gets the names as the model has them.
  report(&sink, {Severity::kWarning, "n\t1", "first 'n\t1'"});
  report(&sink, {Severity::kNote, "", "second"});
  ASSERT_EQ(sink.diagnostics().size(), 2u);
  EXPECT_EQ(sink.diagnostics()[0].severity, Severity::kWarning);
  EXPECT_EQ(sink.diagnostics()[0].node, "n\t1");
  EXPECT_EQ(sink.diagnostics()[0].message, "first 'n\t1'");
  EXPECT_EQ(sink.diagnostics()[1].severity, Severity::kNote);
  EXPECT_EQ(sink.diagnostics()[1].node, "");
  EXPECT_EQ(sink.diagnostics()[1].message, "second");
}

TEST(DiagnosticsTest, ReportWithoutASinkDropsTheDiagnostic) {
  report(nullptr, {Severity::kWarning, "x", "dropped"});  // no crash, nothing to see
  SUCCEED();
}

}  // namespace
}  // namespace onnxopt
