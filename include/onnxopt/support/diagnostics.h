// Diagnostics: the warnings and notes library code reports about a model it accepted (a refused
// fold, a fixed point that did not converge, a domain imported twice). Library code reports them
// to a DiagnosticSink the caller gives (or to none); `opt` prints them on stderr, a library user
// may collect them.
//
//   onnxopt::CollectingDiagnosticSink sink;
//   options.context.diagnostics = &sink;
//   onnxopt::optimize(model, options);
//   for (const onnxopt::Diagnostic& d : sink.diagnostics()) use(d.severity, d.node, d.message);
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/support/diagnostic_stream.h"

namespace onnxopt {

enum class Severity {
  kNote,     ///< information: something was done that the user may want to know about
  kWarning,  ///< the input looks wrong, or something asked for was not done (or not fully)
};

/// "note" or "warning".
const char* severityName(Severity severity);

struct Diagnostic {
  Severity severity = Severity::kWarning;
  /// What the diagnostic is about, as the message names it: a node (its name, or the name of the
  /// output the message is about when it names that) or another location ("function 'f'");
  /// empty when it is about the model or a pass as a whole.
  std::string node;
  /// The whole message, as `opt` prints it after the tool and severity (it names the node too).
  std::string message;
};

/// `TOOL: SEVERITY: MESSAGE` with severityName(severity), no newline and nothing escaped.
std::string formatDiagnostic(const Diagnostic& diagnostic, const std::string& tool = "opt");

/// Where diagnostics go. Library code takes a `DiagnosticSink*`; null drops them.
class DiagnosticSink {
 public:
  virtual ~DiagnosticSink() = default;
  virtual void report(const Diagnostic& diagnostic) = 0;
};

/// Reports `diagnostic` to `sink` when there is one.
void report(DiagnosticSink* sink, const Diagnostic& diagnostic);

/// Keeps every diagnostic, in the order reported (for library users and tests).
class CollectingDiagnosticSink final : public DiagnosticSink {
 public:
  void report(const Diagnostic& diagnostic) override { diagnostics_.push_back(diagnostic); }
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

/// Writes each diagnostic as one line, formatDiagnostic(d, tool) + "\n", through a
/// DiagnosticStream: control characters that names from the model bring into the message are
/// escaped, so a diagnostic is always exactly one line (`opt` uses it on stderr).
class StreamDiagnosticSink final : public DiagnosticSink {
 public:
  explicit StreamDiagnosticSink(std::ostream& out, std::string tool = "opt")
      : stream_(out), tool_(std::move(tool)) {}
  void report(const Diagnostic& diagnostic) override;

 private:
  DiagnosticStream stream_;
  std::string tool_;
};

}  // namespace onnxopt
