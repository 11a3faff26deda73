// opt: the onnxopt command-line driver.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/printer.h"
#include "onnxopt/ir/stats.h"

namespace {

using namespace onnxopt;

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

constexpr const char* kExamples = R"(
Examples:
  opt model.onnx -o out.onnx                 read, verify and re-write a model
  opt model.onnx --emit text                 print the IR as text (the format of pass tests)
  opt model.onnx --emit text --elide-constants
                                             ... with tensors over 16 elements shown as {...}
  opt test.onnxtxt -o model.onnx             compile ONNX textual syntax to a binary model
  opt big.onnx -o out.onnx --external-data   weights to out.onnx.data beside out.onnx
  opt big.onnx -o out.onnx --external-data=weights.bin
  opt model.onnx --stats                     op histogram, node and initializer counts, opsets

Input is the binary ONNX format, or ONNX textual syntax for *.onnxtxt / *.txt files.
Output is written atomically: on any error no output file is created and an existing one is
left untouched. Exit status: 0 on success, 1 when the input or output fails, 2 on bad usage.
)";

struct Options {
  std::string input;
  std::string output;
  std::string emit = "onnx";
  std::string external_data;
  bool external_data_given = false;
  int64_t elide = -1;
  bool stats = false;
};

int fail(const Status& status) {
  std::string msg = status.message();
  for (char& c : msg) {
    if (c == '\n') c = ' ';
  }
  fmt::print(stderr, "opt: error: {}\n", msg);
  return kExitError;
}

int run(const Options& opts) {
  auto model = io::loadModel(opts.input);
  if (!model.isOk()) return fail(model.status());

  if (opts.stats) {
    std::fputs(ir::formatStats(**model, ir::computeStats(**model)).c_str(), stdout);
  }
  if (opts.emit == "text") {
    ir::PrintOptions print;
    print.elide_above = opts.elide;
    std::string text = ir::printModel(**model, print);
    if (opts.output.empty() || opts.output == "-") {
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;
    }
    Status st = io::writeFileAtomically(opts.output, text);
    return st.isOk() ? 0 : fail(st);
  }
  if (opts.output.empty()) return 0;  // --stats alone
  io::SaveOptions save;
  if (opts.external_data_given) {
    save.external_data = io::SaveOptions::ExternalData::kAlways;
    save.external_file = opts.external_data;
  }
  Status st = io::saveModel(**model, opts.output, save);
  if (!st.isOk()) return fail(st.withContext(opts.output));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"opt: the onnxopt ONNX graph optimizer"};
  app.footer(kExamples);
  app.set_version_flag("--version", std::string("onnxopt ") + ONNXOPT_VERSION);
  Options opts;
  app.add_option("input", opts.input, "Model to read (.onnx, or .onnxtxt textual syntax)")
      ->required();
  app.add_option("-o,--output", opts.output, "Where to write the result ('-' for stdout text)");
  app.add_option("--emit", opts.emit, "Output format: onnx (default) or text")
      ->check(CLI::IsMember({"onnx", "text"}));
  auto* ext =
      app.add_option("--external-data", opts.external_data,
                     "Store tensor data in FILE beside the output (default: OUT.data); also "
                     "chosen automatically past 2 GB or when the input used external data")
          ->expected(0, 1);
  auto* elide = app.add_option("--elide-constants", opts.elide,
                               "In text output, show tensors over N elements (default 16) as {...}")
                    ->expected(0, 1);
  app.add_flag("--stats", opts.stats, "Print op histogram, node/initializer counts and opsets");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  opts.external_data_given = ext->count() > 0;
  if (elide->count() > 0 && opts.elide < 0) opts.elide = 16;
  if (opts.emit == "onnx" && opts.output.empty() && !opts.stats) {
    fmt::print(stderr, "opt: error: no output: give -o OUT, --emit text or --stats (see --help)\n");
    return kExitUsage;
  }
  if (opts.emit == "onnx" && opts.output == "-") {
    fmt::print(stderr, "opt: error: binary output cannot go to stdout; give a file with -o\n");
    return kExitUsage;
  }
  try {
    return run(opts);
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "opt: error: {}: out of memory\n", opts.input);
  } catch (const std::exception& e) {
    fmt::print(stderr, "opt: error: {}: {}\n", opts.input, e.what());
  }
  return kExitError;
}
