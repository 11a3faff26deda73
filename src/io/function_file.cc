// Function files: ONNX textual syntax holding functions only, the form of rewrite-rule and
// target libraries; each function keeps the line it was defined at for error messages.
#include "io/importer_internal.h"

namespace onnxopt::io {

using detail::checkImported;
using detail::folderOf;
using detail::Importer;

namespace {

/// A reference attribute's copy (it holds a name and a reference, no data).
ir::Attribute referenceCopy(const ir::Attribute& a) {
  ir::Attribute c;
  c.name = a.name;
  c.kind = a.kind;
  c.ref_attr_name = a.ref_attr_name;
  c.doc_string = a.doc_string;
  return c;
}

/// The line of a "(line: L column: C)" position the parser reports.
std::pair<int, int> parsePosition(const std::string& pos) {
  int line = 0, col = 0;
  if (std::sscanf(pos.c_str(), "(line: %d column: %d)", &line, &col) != 2) return {0, 0};
  return {line, col};
}

/// The parser's message, "[ParseError at position (line: L column: C)]\nError context: X\nwhy",
/// as "path:L:C: why (at: X)".
std::string parseErrorMessage(const std::string& path, std::string msg) {
  int line = 0, col = 0;
  std::string context, why = msg;
  auto at = msg.find("(line: ");
  if (at != std::string::npos) std::tie(line, col) = parsePosition(msg.substr(at));
  auto ctx = msg.find("Error context: ");
  if (ctx != std::string::npos) {
    auto end = msg.find('\n', ctx);
    context = msg.substr(ctx + 15, end == std::string::npos ? std::string::npos : end - ctx - 15);
    why = end == std::string::npos ? std::string() : msg.substr(end + 1);
  }
  std::replace(why.begin(), why.end(), '\n', ' ');
  auto trim = [](std::string t) {
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    size_t b = 0;
    while (b < t.size() && std::isspace(static_cast<unsigned char>(t[b]))) ++b;
    return t.substr(b);
  };
  return fmt::format("{}:{}:{}: textual syntax error: {}{}", path, line, col, trim(why),
                     context.empty() ? "" : " (at: " + trim(context) + ")");
}

/// The line in [first, last] of `lines` where `name` is defined (written left of a '=').
int definitionLine(const std::vector<std::string_view>& lines, int first, int last,
                   const std::string& name) {
  for (int l = std::max(first, 1); l <= last && l <= static_cast<int>(lines.size()); ++l) {
    std::string_view text = lines[l - 1];
    auto eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view left = text.substr(0, eq);
    // Attribute assignments (`<alpha = 1>`) come after an op name and '(' or '<'; a definition's
    // left side is a plain list of names.
    if (left.find_first_of("<(@\"") != std::string_view::npos) continue;
    size_t i = 0;
    while (i < left.size()) {
      while (i < left.size() &&
             (left[i] == ',' || std::isspace(static_cast<unsigned char>(left[i]))))
        ++i;
      size_t j = i;
      while (j < left.size() && left[j] != ',' &&
             !std::isspace(static_cast<unsigned char>(left[j])))
        ++j;
      if (j > i && left.substr(i, j - i) == name) return l;
      i = j;
    }
  }
  return first;
}

}  // namespace

StatusOr<ir::FunctionFile> parseFunctionFile(std::string_view text, const std::string& path,
                                             const std::vector<std::string>& extra_attributes) {
  std::string owned(text);
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= owned.size();) {
    size_t end = owned.find('\n', start);
    if (end == std::string::npos) end = owned.size();
    lines.emplace_back(owned.data() + start, end - start);
    start = end + 1;
  }
  onnx::OnnxParser parser(owned.c_str());
  onnx::ModelProto proto;
  proto.set_ir_version(10);
  proto.mutable_graph()->set_name("functions");
  struct Span {
    int first = 0, last = 0;
  };
  std::vector<Span> spans;
  // Extra attributes taken off the nodes before the schema check: (function, first output) ->
  // attributes, put back on the imported nodes.
  std::map<std::pair<size_t, std::string>, std::vector<onnx::AttributeProto>> stashed;
  std::map<std::string, std::pair<int64_t, int>> imports;  // domain -> version, line
  try {
    while (!parser.EndOfInput()) {
      int first = parsePosition(parser.GetCurrentPos()).first;
      onnx::FunctionProto* fp = proto.add_functions();
      onnx::Common::Status status = parser.Parse(*fp);
      if (!status.IsOK()) {
        return invalidArgument("{}", parseErrorMessage(path, status.ErrorMessage()));
      }
      int last = parsePosition(parser.GetCurrentPos()).first;
      spans.push_back({first, last});
      for (const auto& op : fp->opset_import()) {
        std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
        auto [it, inserted] = imports.emplace(domain, std::make_pair(op.version(), first));
        if (!inserted && it->second.first != op.version()) {
          return invalidArgument(
              "{}:{}: function '{}' imports domain '{}' at version {}, but line {} imports it at "
              "version {}: one file holds one version of each domain",
              path, first, fp->name(), domain, op.version(), it->second.second, it->second.first);
        }
      }
      for (auto& node : *fp->mutable_node()) {
        auto* attrs = node.mutable_attribute();
        for (int a = attrs->size() - 1; a >= 0; --a) {
          std::string key = node.op_type() + "." + attrs->Get(a).name();
          if (std::find(extra_attributes.begin(), extra_attributes.end(), key) ==
              extra_attributes.end()) {
            continue;
          }
          if (node.output_size() == 0) continue;
          stashed[{spans.size() - 1, node.output(0)}].push_back(attrs->Get(a));
          attrs->DeleteSubrange(a, 1);
        }
      }
    }
  } catch (const std::exception& e) {
    return invalidArgument("{}: textual syntax error: bad literal ({})", path, e.what());
  }
  if (spans.empty()) return invalidArgument("{}: the file holds no function", path);
  for (const auto& [domain, version] : imports) {
    auto* op = proto.add_opset_import();
    op->set_domain(domain);
    op->set_version(version.first);
  }
  Importer importer(folderOf(path));
  auto imported = checkImported(importer.importModel(proto));
  if (!imported.isOk()) {
    // The importer names the function; say which line it starts on.
    std::string msg = imported.status().message();
    for (size_t f = 0; f < spans.size(); ++f) {
      const std::string& name = proto.functions(static_cast<int>(f)).name();
      if (msg.find("function '" + name + "'") != std::string::npos) {
        return invalidArgument("{}:{}: {}", path, spans[f].first, msg);
      }
    }
    return invalidArgument("{}: {}", path, msg);
  }
  ir::FunctionFile file;
  file.path = path;
  file.model = std::move(imported).value();
  for (size_t f = 0; f < file.model->functions.size(); ++f) {
    ir::Function& fn = *file.model->functions[f];
    file.function_lines[&fn] = spans[f].first;
    int64_t opset = 0;
    for (const auto& imp : fn.opset_imports) {
      if (imp.domain.empty() || imp.domain == "ai.onnx") opset = imp.version;
    }
    for (ir::Node* n : *fn.body) {
      ir::FunctionFile::NodeInfo info;
      std::string first_output =
          n->numOutputs() > 0 && n->output(0) != nullptr ? n->output(0)->name() : std::string();
      info.line = definitionLine(lines, spans[f].first, spans[f].last, first_output);
      auto extra = stashed.find({f, first_output});
      if (extra != stashed.end()) {
        for (onnx::AttributeProto& ap : extra->second) {
          ir::Attribute a;
          RETURN_IF_ERROR(importer.importPlainAttribute(ap, a));
          ir::Builder::setAttribute(n, std::move(a));
        }
      }
      bool standard = n->domain().empty() || n->domain() == "ai.onnx";
      const onnx::OpSchema* schema =
          standard && opset > 0 && opset <= INT_MAX
              ? onnx::OpSchemaRegistry::Schema(n->opType(), static_cast<int>(opset),
                                               onnx::ONNX_DOMAIN)
              : nullptr;
      if (schema != nullptr) {
        // The parser leaves a reference (`alpha = @alpha`) untyped; onnx.checker wants the type
        // the schema gives the attribute.
        std::vector<ir::Attribute> typed;
        for (const ir::Attribute& a : n->attributes()) {
          auto it = schema->attributes().find(a.name);
          if (a.ref_attr_name.empty() || a.kind != ir::Attribute::Kind::kUndefined ||
              it == schema->attributes().end()) {
            continue;
          }
          ir::Attribute t = referenceCopy(a);
          t.kind = static_cast<ir::Attribute::Kind>(static_cast<int>(it->second.type));
          typed.push_back(std::move(t));
        }
        for (ir::Attribute& t : typed) ir::Builder::setAttribute(n, std::move(t));
        for (const auto& [name, attr] : schema->attributes()) {
          if (attr.default_value.type() == onnx::AttributeProto::UNDEFINED) continue;
          ir::Attribute a;
          RETURN_IF_ERROR(importer.importPlainAttribute(attr.default_value, a));
          a.name = name;
          info.defaults.push_back(std::move(a));
        }
      }
      file.nodes[n] = std::move(info);
    }
  }
  return file;
}

StatusOr<ir::FunctionFile> loadFunctionFile(const std::string& path,
                                            const std::vector<std::string>& extra_attributes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(StatusCode::kNotFound, "{}: cannot read the file ({})", path,
                     std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parseFunctionFile(buffer.str(), path, extra_attributes);
}

}  // namespace onnxopt::io
