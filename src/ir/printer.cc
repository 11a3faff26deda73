#include "onnxopt/ir/printer.h"

#include <algorithm>
#include <cstring>

#include <unordered_map>
#include "onnxopt/support/bytes.h"

#include <fmt/format.h>

#include "onnxopt/support/half.h"

namespace onnxopt::ir {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

template <typename F>
std::string formatFloat(F v) {
  std::string s = fmt::format("{}", v);  // shortest text that reads back to the same F
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep floats visibly floats
  return s;
}

std::string formatElement(DataType dtype, const uint8_t* p) {
  switch (dtype) {
    case DataType::kFloat:
      return formatFloat(loadUnaligned<float>(p));
    case DataType::kDouble:
      return formatFloat(loadUnaligned<double>(p));
    case DataType::kFloat16:
      return formatFloat(halfToFloat(loadUnaligned<uint16_t>(p)));
    case DataType::kBfloat16:
      return formatFloat(bfloat16ToFloat(loadUnaligned<uint16_t>(p)));
    case DataType::kInt8:
      return std::to_string(loadUnaligned<int8_t>(p));
    case DataType::kInt16:
      return std::to_string(loadUnaligned<int16_t>(p));
    case DataType::kInt32:
      return std::to_string(loadUnaligned<int32_t>(p));
    case DataType::kInt64:
      return std::to_string(loadUnaligned<int64_t>(p));
    case DataType::kUint8:
      return std::to_string(loadUnaligned<uint8_t>(p));
    case DataType::kUint16:
      return std::to_string(loadUnaligned<uint16_t>(p));
    case DataType::kUint32:
      return std::to_string(loadUnaligned<uint32_t>(p));
    case DataType::kUint64:
      return std::to_string(loadUnaligned<uint64_t>(p));
    case DataType::kBool:
      return loadUnaligned<uint8_t>(p) ? "true" : "false";
    case DataType::kComplex64:
      return "(" + formatFloat(loadUnaligned<float>(p)) + "," +
             formatFloat(loadUnaligned<float>(p + 4)) + ")";
    case DataType::kComplex128:
      return "(" + formatFloat(loadUnaligned<double>(p)) + "," +
             formatFloat(loadUnaligned<double>(p + 8)) + ")";
    default:
      return fmt::format("0x{:02x}", *p);  // float8 and packed types: the raw byte
  }
}

class Printer {
 public:
  explicit Printer(const PrintOptions& options) : options_(options) {}

  std::string model(const Model& m) {
    std::vector<std::string> opsets;
    for (const auto& op : m.opset_imports) {
      opsets.push_back(fmt::format("{}:{}", op.domain.empty() ? "ai.onnx" : op.domain, op.version));
    }
    out_ += fmt::format("model ir_version={} opsets=[{}]", m.ir_version, fmt::join(opsets, ", "));
    if (!m.producer_name.empty()) out_ += " producer=" + quote(m.producer_name);
    out_ += "\n";
    for (const auto& [k, v] : m.metadata_props)
      out_ += "metadata " + quote(k) + "=" + quote(v) + "\n";
    for (const auto& f : m.functions) function(*f);
    graph(*m.graph, 0, "graph");
    return std::move(out_);
  }

  std::string graphOnly(const Graph& g) {
    graph(g, 0, "graph");
    return std::move(out_);
  }

 private:
  const std::string& nameOf(const Value* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    std::string name = v->name().empty() ? fmt::format("%_{}", names_.size()) : "%" + v->name();
    return names_.emplace(v, std::move(name)).first->second;
  }

  std::string typed(const Value* v) {
    if (!v->type().isKnown()) return nameOf(v);
    return nameOf(v) + ": " + typeToString(v->type());
  }

  std::string tensorBody(const Tensor& t) {
    auto n = t.numElements().value_or(0);
    if (options_.elide_above >= 0 && n > options_.elide_above) return "{...}";
    std::vector<std::string> items;
    if (t.dtype() == DataType::kString) {
      for (const auto& s : t.strings()) items.push_back(quote(s));
    } else if (t.byteSize() == 0 && n > 0) {
      return "{<no data>}";
    } else {
      int bits = dataTypeBits(t.dtype());
      size_t width = bits >= 8 ? static_cast<size_t>(bits / 8) : 1;
      size_t count = bits >= 8 ? static_cast<size_t>(n) : t.byteSize();
      for (size_t i = 0; i < count && (i + 1) * width <= t.byteSize(); ++i) {
        items.push_back(formatElement(t.dtype(), t.data() + i * width));
      }
    }
    return "{" + fmt::format("{}", fmt::join(items, ", ")) + "}";
  }

  std::string tensorText(const Tensor& t) {
    return fmt::format("tensor<{}[{}]>{}", dataTypeName(t.dtype()), fmt::join(t.dims(), ","),
                       tensorBody(t));
  }

  std::string attributeValue(const Attribute& a) {
    using Kind = Attribute::Kind;
    if (!a.ref_attr_name.empty()) return "@" + a.ref_attr_name;
    auto list = [](const auto& xs, auto fn) {
      std::vector<std::string> items;
      for (const auto& x : xs) items.push_back(fn(x));
      return "[" + fmt::format("{}", fmt::join(items, ", ")) + "]";
    };
    switch (a.kind) {
      case Kind::kFloat:
        return formatFloat(a.f);
      case Kind::kInt:
        return std::to_string(a.i);
      case Kind::kString:
        return quote(a.s);
      case Kind::kFloats:
        return list(a.floats, [](float f) { return formatFloat(f); });
      case Kind::kInts:
        return list(a.ints, [](int64_t i) { return std::to_string(i); });
      case Kind::kStrings:
        return list(a.strings, quote);
      case Kind::kTensor:
      case Kind::kTensors: {
        auto items = list(a.tensors, [this](const Tensor& t) { return tensorText(t); });
        return a.kind == Kind::kTensor ? items.substr(1, items.size() - 2) : items;
      }
      case Kind::kSparseTensor:
      case Kind::kSparseTensors: {
        auto items = list(a.sparse_tensors, [this](const SparseTensor& s) {
          return fmt::format("sparse<[{}]>(values={}, indices={})", fmt::join(s.dims, ","),
                             tensorText(s.values), tensorText(s.indices));
        });
        return a.kind == Kind::kSparseTensor ? items.substr(1, items.size() - 2) : items;
      }
      case Kind::kTypeProto:
      case Kind::kTypeProtos: {
        auto items = list(a.types, [](const Type& t) { return "type(" + typeToString(t) + ")"; });
        return a.kind == Kind::kTypeProto ? items.substr(1, items.size() - 2) : items;
      }
      case Kind::kUndefined:
        return "<undefined>";
      case Kind::kGraph:
      case Kind::kGraphs:
        return "<graph>";
    }
    return "?";
  }

  void indent(int depth) { out_.append(static_cast<size_t>(depth) * 2, ' '); }

  void node(const Node& n, int depth) {
    indent(depth);
    std::vector<std::string> outs;
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      outs.push_back(n.output(i) != nullptr ? typed(n.output(i)) : std::string("%<absent>"));
    }
    if (!outs.empty()) out_ += fmt::format("{} = ", fmt::join(outs, ", "));
    out_ += n.domain().empty() ? n.opType() : n.domain() + "." + n.opType();
    std::vector<const Attribute*> attrs;
    for (const Attribute& a : n.attributes()) attrs.push_back(&a);
    std::sort(attrs.begin(), attrs.end(),
              [](const Attribute* a, const Attribute* b) { return a->name < b->name; });
    std::vector<std::string> inline_attrs;
    for (const Attribute* a : attrs) {
      if (a->graphs.empty()) inline_attrs.push_back(a->name + "=" + attributeValue(*a));
    }
    if (!inline_attrs.empty()) out_ += fmt::format("<{}>", fmt::join(inline_attrs, ", "));
    std::vector<std::string> ins;
    for (const Value* v : n.inputs())
      ins.push_back(v != nullptr ? nameOf(v) : std::string("%<absent>"));
    out_ += fmt::format("({})", fmt::join(ins, ", "));
    bool has_graphs = std::any_of(attrs.begin(), attrs.end(),
                                  [](const Attribute* a) { return !a->graphs.empty(); });
    if (has_graphs) out_ += " {";
    if (!n.name().empty()) out_ += "  # " + n.name();
    out_ += "\n";
    if (!has_graphs) return;
    for (const Attribute* a : attrs) {
      for (const auto& g : a->graphs) graph(*g, depth + 1, a->name + " = graph");
    }
    indent(depth);
    out_ += "}\n";
  }

  void graph(const Graph& g, int depth, const std::string& header) {
    indent(depth);
    out_ += header + " " + quote(g.name()) + " {\n";
    for (const Value* v : g.inputs()) {
      indent(depth + 1);
      out_ += "input " + typed(v);
      if (v->initializer() != nullptr) out_ += " = " + tensorBody(*v->initializer());
      out_ += "\n";
    }
    for (const Value* v : g.initializers()) {
      if (v->kind() == Value::Kind::kGraphInput) continue;
      indent(depth + 1);
      if (const Tensor* t = v->initializer()) {
        out_ += "init " + typed(v) + " = " + tensorBody(*t) + "\n";
      } else if (const SparseTensor* s = v->sparseInitializer()) {
        out_ += fmt::format("init {} = sparse(values={}, indices={})\n", typed(v),
                            tensorText(s->values), tensorText(s->indices));
      }
    }
    for (const Node* n : g) node(*n, depth + 1);
    for (const Value* v : g.outputs()) {
      indent(depth + 1);
      out_ += "output " + nameOf(v) + "\n";
    }
    indent(depth);
    out_ += "}\n";
  }

  void function(const Function& f) {
    std::vector<std::string> opsets;
    for (const auto& op : f.opset_imports) {
      opsets.push_back(fmt::format("{}:{}", op.domain.empty() ? "ai.onnx" : op.domain, op.version));
    }
    out_ += fmt::format("function {}.{} attributes=[{}] opsets=[{}]\n", f.domain, f.name,
                        fmt::join(f.attribute_names, ", "), fmt::join(opsets, ", "));
    graph(*f.body, 0, "body");
  }

  const PrintOptions& options_;
  std::string out_;
  std::unordered_map<const Value*, std::string> names_;
};

}  // namespace

std::string printModel(const Model& model, const PrintOptions& options) {
  return Printer(options).model(model);
}

std::string printGraph(const Graph& graph, const PrintOptions& options) {
  return Printer(options).graphOnly(graph);
}

}  // namespace onnxopt::ir
