#include "onnxopt/support/diagnostics.h"

namespace onnxopt {

const char* severityName(Severity severity) {
  switch (severity) {
    case Severity::kNote:
      return "note";
    case Severity::kWarning:
      return "warning";
  }
  return "warning";
}

std::string formatDiagnostic(const Diagnostic& diagnostic, const std::string& tool) {
  return tool + ": " + severityName(diagnostic.severity) + ": " + diagnostic.message;
}

void report(DiagnosticSink* sink, const Diagnostic& diagnostic) {
  if (sink != nullptr) sink->report(diagnostic);
}

void StreamDiagnosticSink::report(const Diagnostic& diagnostic) {
  // One write: the stream keeps a newline only at the end of a write, so every control character
  // of the message (a name holding "\nopt: error: ...") is escaped.
  std::string line = formatDiagnostic(diagnostic, tool_) + "\n";
  stream_.write(line.data(), static_cast<std::streamsize>(line.size()));
  stream_.flush();
}

}  // namespace onnxopt
