// Import/export: text parsing, binary round trips, node sorting, errors naming their cause,
// external data.
#include "onnxopt/io/model_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>

#include "onnxopt/ir/builder.h"
#include "onnxopt/ir/printer.h"
#include "onnxopt/ir/verifier.h"

namespace onnxopt::io {
namespace {

using B = onnxopt::ir::Builder;

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "onnxopt_io_test.XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path path() const { return path_; }

 private:
  fs::path path_;
};

/// Writes `g (float[16] x) => (y) { y = Add(x, w) }` with w in external data described by `kv`.
std::string writeExternalModel(const fs::path& dir,
                               const std::vector<std::pair<std::string, std::string>>& kv) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(16);
  *g->add_output() = *x;
  g->mutable_output(0)->set_name("y");
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(16);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [k, v] : kv) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  std::string path = (dir / "model.onnx").string();
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

std::string errorOf(std::string_view text) {
  auto model = parseModelText(text);
  return model.isOk() ? std::string("<no error>") : model.status().message();
}

TEST(IoTest, ParsesTextAndPrintsDeterministically) {
  auto model = parseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N,4] x) => (float[N,4] y) {
      w = Constant <value = float[4] {1.0, 2.0, 3.0, 4.0}> ()
      y = Mul(x, w)
    }
  )");
  ASSERT_TRUE(model.isOk()) << model.status().message();
  EXPECT_EQ(ir::printModel(**model),
            "model ir_version=8 opsets=[ai.onnx:17]\n"
            "graph \"g\" {\n"
            "  input %x: float[N,4]\n"
            "  %w = Constant<value=tensor<float[4]>{1.0, 2.0, 3.0, 4.0}>()\n"
            "  %y: float[N,4] = Mul(%x, %w)\n"
            "  output %y\n"
            "}\n");
  ir::PrintOptions elide;
  elide.elide_above = 2;
  EXPECT_NE(ir::printModel(**model, elide).find("tensor<float[4]>{...}"), std::string::npos);
}

TEST(IoTest, SortsUnsortedNodes) {
  auto model = parseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x) => (float[4] z) {
      z = Neg(y)
      y = Relu(x)
    }
  )");
  ASSERT_TRUE(model.isOk()) << model.status().message();
  EXPECT_EQ((*model)->graph->firstNode()->opType(), "Relu");
  EXPECT_EQ((*model)->graph->lastNode()->opType(), "Neg");
}

TEST(IoTest, SortAccountsForSubgraphFreeNames) {
  // The If's branch reads t, produced by a node listed after the If.
  auto model = parseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x, bool c) => (float[4] y) {
      y = If(c) <
        then_branch = g1 () => (float[4] a) { a = Neg(t) },
        else_branch = g2 () => (float[4] b) { b = Abs(t) }
      >
      t = Relu(x)
    }
  )");
  ASSERT_TRUE(model.isOk()) << model.status().message();
  EXPECT_EQ((*model)->graph->firstNode()->opType(), "Relu");
}

TEST(IoTest, ErrorsNameTheNodeAndValue) {
  EXPECT_NE(errorOf(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[4] x) => (float[4] y) { y = Relu(nope) })")
                .find("input 'nope' is not defined"),
            std::string::npos);
  EXPECT_NE(errorOf(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[4] x) => (float[4] y) { y = Relu(x) y = Neg(x) })")
                .find("'y' is defined twice"),
            std::string::npos);
  EXPECT_NE(errorOf(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[4] x) => (float[4] y) { a = Relu(b) b = Neg(a) y = Abs(a) })")
                .find("cycle"),
            std::string::npos);
  EXPECT_NE(errorOf(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[4] x) => (float[4] y) { y = Relu(x) x = Neg(y) })")
                .find("redefines a graph input"),
            std::string::npos);
  EXPECT_NE(errorOf(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[4] x) => (float[4] q) { y = Relu(x) })")
                .find("graph output 'q' is not defined"),
            std::string::npos);
  EXPECT_NE(errorOf(R"(<ir_version: 99, opset_import: ["" : 17]>
      g (float[4] x) => (float[4] y) { y = Relu(x) })")
                .find("unknown IR version 99"),
            std::string::npos);
  EXPECT_NE(errorOf("this is not onnx").find("syntax error"), std::string::npos);
}

TEST(IoTest, BinaryRoundTripIsStable) {
  auto model = parseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17, "custom.domain" : 1], producer_name: "test",
     doc_string: "model doc", metadata_props: ["author" : "me"]>
    g (float[N,4] x, bool c) => (float[N,4] y) {
      t = custom.domain.Op <alpha = 0.5, names = ["a", "b"]> (x)
      y = If(c) <
        then_branch = g1 () => (float[N,4] a) { a = Neg(t) },
        else_branch = g2 () => (float[N,4] b) { b = Abs(x) }
      >
    }
  )");
  ASSERT_TRUE(model.isOk()) << model.status().message();
  auto bytes = serializeModel(**model);
  ASSERT_TRUE(bytes.isOk());
  auto again = parseModelBinary(*bytes);
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(ir::printModel(**model), ir::printModel(**again));
  auto bytes2 = serializeModel(**again);
  ASSERT_TRUE(bytes2.isOk());
  EXPECT_EQ(*bytes, *bytes2);
  EXPECT_EQ((*again)->doc_string, "model doc");
  ASSERT_EQ((*again)->metadata_props.size(), 1u);
  EXPECT_EQ((*again)->metadata_props[0].second, "me");
}

/// A chain of `n` Relu nodes over a weighted Add, built in the IR.
std::unique_ptr<ir::Model> reluChain(int n) {
  auto model = parseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x) => (float[4] y) <float[4] w = {1, 2, 3, 4}> { y = Add(x, w) }
  )");
  EXPECT_TRUE(model.isOk());
  ir::Graph& g = *(*model)->graph;
  ir::Node* add = g.firstNode();
  ir::Value* y = add->output();
  ir::Value* last = y;
  for (int i = 0; i < n; ++i) {
    ir::Node* relu = B::createNode(g, "Relu", "", {last}, 1, nullptr);
    B::setName(relu->output(), "r" + std::to_string(i));
    last = relu->output();
  }
  B::setOutput(g, 0, last);
  return std::move(*model);
}

// The exporter writes a main graph's nodes as messages, or (past 100000 nodes) as serialized
// bytes one node at a time: both are protobuf's own serialization, at the size announced.
TEST(IoTest, SerializedBytesAreProtobufsOwnForSmallAndLargeGraphs) {
  for (int n : {3, 100005}) {
    auto model = reluChain(n);
    ASSERT_TRUE(ir::verifyModel(*model).isOk()) << n;
    size_t announced = 0;
    std::string bytes;
    auto written = serializeModelInto(*model, [&](size_t size) {
      announced = size;
      bytes.resize(size);
      return bytes.data();
    });
    ASSERT_TRUE(written.isOk()) << written.status().message();
    EXPECT_EQ(*written, announced);
    onnx::ModelProto proto;
    ASSERT_TRUE(proto.ParseFromString(bytes)) << n;
    EXPECT_EQ(proto.graph().node_size(), n + 1);
    EXPECT_EQ(proto.SerializeAsString(), bytes) << n;
    auto again = serializeModel(*model);
    ASSERT_TRUE(again.isOk());
    EXPECT_EQ(*again, bytes);
  }
}

// The main graph's initializers are written from the IR's bytes, between the tensor fields before
// raw_data (9) and those after it: the result is still protobuf's own serialization, with every
// field kept (doc strings, unknown fields, strings, empty and sparse tensors, graph fields past 5).
TEST(IoTest, InitializersAreWrittenAroundTheirRawData) {
  onnx::ModelProto in;
  in.set_ir_version(8);
  in.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *in.mutable_graph();
  g.set_name("g");
  g.set_doc_string("graph doc");
  auto* w = g.add_initializer();
  w->set_name("w");
  w->add_dims(3);
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_float_data(1.f);
  w->add_float_data(2.f);
  w->add_float_data(3.f);
  w->set_doc_string("weights");
  w->GetReflection()->MutableUnknownFields(w)->AddVarint(1000, 7);
  auto* s = g.add_initializer();
  s->set_name("s");
  s->add_dims(1);
  s->set_data_type(onnx::TensorProto::STRING);
  s->add_string_data("text");
  auto* e = g.add_initializer();
  e->set_name("e");
  e->add_dims(0);
  e->set_data_type(onnx::TensorProto::FLOAT);
  auto* sparse = g.add_sparse_initializer();
  sparse->add_dims(4);
  sparse->mutable_values()->set_name("sp");
  sparse->mutable_values()->set_data_type(onnx::TensorProto::FLOAT);
  sparse->mutable_values()->add_dims(1);
  sparse->mutable_values()->add_float_data(5.f);
  sparse->mutable_indices()->set_data_type(onnx::TensorProto::INT64);
  sparse->mutable_indices()->add_dims(1);
  sparse->mutable_indices()->add_int64_data(2);
  auto* x = g.add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
  auto* add = g.add_node();
  add->set_op_type("Add");
  add->add_input("x");
  add->add_input("w");
  add->add_output("y");
  *g.add_output() = *x;
  g.mutable_output(0)->set_name("y");
  g.GetReflection()->MutableUnknownFields(&g)->AddVarint(1001, 9);

  auto model = parseModelBinary(in.SerializeAsString());
  ASSERT_TRUE(model.isOk()) << model.status().message();
  auto bytes = serializeModel(**model);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().message();
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(*bytes));
  EXPECT_EQ(out.SerializeAsString(), *bytes);
  ASSERT_EQ(out.graph().initializer_size(), 3);
  const onnx::TensorProto& w2 = out.graph().initializer(0);
  EXPECT_EQ(w2.name(), "w");
  EXPECT_EQ(w2.doc_string(), "weights");
  const float expected[3] = {1.f, 2.f, 3.f};
  EXPECT_EQ(w2.raw_data(), std::string(reinterpret_cast<const char*>(expected), sizeof expected));
  ASSERT_EQ(w2.unknown_fields().field_count(), 1);
  EXPECT_EQ(w2.unknown_fields().field(0).number(), 1000);
  EXPECT_EQ(out.graph().initializer(1).string_data(0), "text");
  EXPECT_EQ(out.graph().initializer(2).name(), "e");
  EXPECT_TRUE(out.graph().initializer(2).has_raw_data());
  EXPECT_TRUE(out.graph().initializer(2).raw_data().empty());
  ASSERT_EQ(out.graph().sparse_initializer_size(), 1);
  EXPECT_EQ(out.graph().sparse_initializer(0).values().name(), "sp");
  EXPECT_EQ(out.graph().doc_string(), "graph doc");
  EXPECT_EQ(out.graph().name(), "g");
  ASSERT_EQ(out.graph().unknown_fields().field_count(), 1);
  EXPECT_EQ(out.graph().unknown_fields().field(0).number(), 1001);
  EXPECT_EQ(out.graph().node(0).op_type(), "Add");
}

/// Bytes held by a test, as parseModelBinary's owner.
class TestBytes final : public ir::Buffer {
 public:
  explicit TestBytes(std::string bytes) : bytes_(std::move(bytes)) {}
  const uint8_t* data() const override { return reinterpret_cast<const uint8_t*>(bytes_.data()); }
  size_t size() const override { return bytes_.size(); }
  std::string_view view() const { return bytes_; }

 private:
  std::string bytes_;
};

onnx::TensorProto* addFloats(onnx::GraphProto& g, const std::string& name, int n, float first) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->add_dims(n);
  t->set_data_type(onnx::TensorProto::FLOAT);
  std::vector<float> values(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) values[static_cast<size_t>(i)] = first + static_cast<float>(i);
  t->set_raw_data(values.data(), values.size() * sizeof(float));
  return t;
}

/// y = x + big + small, with a large and a small raw_data initializer.
onnx::ModelProto weightedModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("g");
  addFloats(g, "big", 1000, 1.f)->set_doc_string("after raw_data");
  addFloats(g, "small", 1000, -5.f)->clear_raw_data();  // float_data instead, below
  for (int i = 0; i < 1000; ++i) g.mutable_initializer(1)->add_float_data(static_cast<float>(i));
  addFloats(g, "tiny", 2, 0.5f);
  auto* x = g.add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1000);
  for (const char* w : {"big", "small"}) {
    auto* add = g.add_node();
    add->set_op_type("Add");
    add->add_input(g.node_size() == 1 ? "x" : "t");
    add->add_input(w);
    add->add_output(g.node_size() == 1 ? "t" : "y");
  }
  *g.add_output() = *x;
  g.mutable_output(0)->set_name("y");
  return m;
}

// With the owner of the bytes, the main graph's raw_data weights are views of those bytes, not
// copies: the model is the one parsed without an owner, and exports to the same bytes.
TEST(IoTest, WeightsAreViewedInTheOwnersBytes) {
  auto owner = std::make_shared<TestBytes>(weightedModel().SerializeAsString());
  auto viewed = parseModelBinary(owner->view(), ".", {}, owner);
  ASSERT_TRUE(viewed.isOk()) << viewed.status().message();
  auto copied = parseModelBinary(owner->view());
  ASSERT_TRUE(copied.isOk()) << copied.status().message();
  EXPECT_EQ(ir::printModel(**viewed), ir::printModel(**copied));
  auto inside = [&](const ir::Tensor& t) {
    return t.data() >= owner->data() && t.data() + t.byteSize() <= owner->data() + owner->size();
  };
  std::map<std::string, const ir::Tensor*> by_name;
  for (const ir::Value* v : (*viewed)->graph->initializers()) by_name[v->name()] = v->initializer();
  EXPECT_TRUE(inside(*by_name.at("big")));     // raw_data: viewed
  EXPECT_FALSE(inside(*by_name.at("small")));  // float_data: converted
  EXPECT_FALSE(inside(*by_name.at("tiny")));   // under kMinViewedBytes: copied
  EXPECT_EQ(by_name.at("big")->docString(), "after raw_data");
  auto a = serializeModel(**viewed);
  auto b = serializeModel(**copied);
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_EQ(*a, *b);
  // The model keeps the owner alive.
  std::weak_ptr<TestBytes> watch = owner;
  owner.reset();
  EXPECT_FALSE(watch.expired());
  viewed->reset();
  EXPECT_TRUE(watch.expired());
}

// Node fields this build's NodeProto does not know (metadata_props, 9, from onnx 1.16; field 8;
// a varint past them) are cut out of the bytes before protobuf parses them, with or without
// weights to view: the model reads as protobuf's own parse does, and each node is written back
// byte for byte, its unknown fields after the known ones, in their order.
TEST(IoTest, NodeUnknownFieldsAreCutAndWrittenBack) {
  for (bool with_weights : {false, true}) {
    onnx::ModelProto m = weightedModel();
    if (!with_weights) m.mutable_graph()->clear_initializer();
    for (int i = 0; i < m.graph().node_size(); ++i) {
      auto* unknown = m.mutable_graph()->mutable_node(i)->GetReflection()->MutableUnknownFields(
          m.mutable_graph()->mutable_node(i));
      unknown->AddLengthDelimited(9, "metadata " + std::to_string(i));
      unknown->AddVarint(1234, 56 + static_cast<uint64_t>(i));
      unknown->AddLengthDelimited(8, "overload");
    }
    if (!with_weights) {  // the inputs the nodes read, so that the model is valid without them
      for (const char* w : {"big", "small"}) {
        *m.mutable_graph()->add_input() = m.graph().input(0);
        m.mutable_graph()->mutable_input(m.graph().input_size() - 1)->set_name(w);
      }
    }
    const std::string bytes = m.SerializeAsString();
    auto owner = std::make_shared<TestBytes>(bytes);
    auto cut = parseModelBinary(owner->view(), ".", {}, owner);
    ASSERT_TRUE(cut.isOk()) << cut.status().message();
    auto parsed = parseModelBinary(bytes);  // no owner: protobuf keeps the unknown fields
    ASSERT_TRUE(parsed.isOk()) << parsed.status().message();
    std::vector<std::string> a, b;
    for (const ir::Node* n : *(*cut)->graph) a.push_back(n->unknownFields());
    for (const ir::Node* n : *(*parsed)->graph) b.push_back(n->unknownFields());
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a, b);
    EXPECT_FALSE(a[0].empty());
    auto written = serializeModel(**cut);
    ASSERT_TRUE(written.isOk()) << written.status().message();
    onnx::ModelProto out;
    ASSERT_TRUE(out.ParseFromString(*written));
    EXPECT_EQ(out.SerializeAsString(), *written);  // protobuf's own serialization
    ASSERT_EQ(out.graph().node_size(), m.graph().node_size());
    for (int i = 0; i < m.graph().node_size(); ++i) {
      EXPECT_EQ(out.graph().node(i).SerializeAsString(), m.graph().node(i).SerializeAsString())
          << "node " << i << ", with_weights " << with_weights;
    }
  }
}

/// A length-delimited field (key, length, payload), as protobuf writes it.
std::string field(int number, const std::string& payload) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    google::protobuf::internal::WireFormatLite::WriteBytes(number, payload, &coded);
  }
  return out;
}

// Bytes that protobuf reads with merging or overriding (a second graph field: merged; a second
// raw_data: the last wins) or not at all (truncated) are parsed whole: the same model, or the same
// error, as without an owner.
TEST(IoTest, ViewingWeightsKeepsProtobufsReading) {
  const std::string plain = weightedModel().SerializeAsString();
  onnx::ModelProto extra;
  addFloats(*extra.mutable_graph(), "big2", 1000, 7.f);
  // An initializer with two raw_data fields, the second 4000 bytes of 2.0f.
  onnx::GraphProto g;
  onnx::TensorProto* w = addFloats(g, "w", 1000, 1.f);
  std::vector<float> twos(1000, 2.f);
  std::string second = field(9, std::string(reinterpret_cast<const char*>(twos.data()), 4000));
  onnx::ModelProto shell = weightedModel();
  shell.mutable_graph()->clear_initializer();
  shell.mutable_graph()->clear_node();
  shell.mutable_graph()->clear_output();
  *shell.mutable_graph()->add_output() = shell.graph().input(0);
  std::string graph_bytes =
      field(5, w->SerializeAsString() + second) + shell.graph().SerializeAsString();
  onnx::ModelProto head = shell;
  head.clear_graph();
  std::string two_raw = head.SerializeAsString() + field(7, graph_bytes);

  for (const std::string& bytes : {plain + extra.SerializeAsString(), two_raw,
                                   plain.substr(0, 2000), plain.substr(0, plain.size() - 3)}) {
    auto owner = std::make_shared<TestBytes>(bytes);
    auto viewed = parseModelBinary(owner->view(), ".", {}, owner);
    auto copied = parseModelBinary(owner->view());
    ASSERT_EQ(viewed.isOk(), copied.isOk()) << (viewed.isOk() ? copied : viewed).status().message();
    if (viewed.isOk()) {
      auto a = serializeModel(**viewed);
      auto b = serializeModel(**copied);
      ASSERT_TRUE(a.isOk() && b.isOk());
      EXPECT_EQ(*a, *b);
    } else {
      EXPECT_EQ(viewed.status().message(), copied.status().message());
    }
  }
  // (The two-raw_data model reads as protobuf does: the second value.)
  onnx::ModelProto check;
  ASSERT_TRUE(check.ParseFromString(two_raw));
  EXPECT_EQ(check.graph().initializer(0).raw_data(), second.substr(3));
}

// loadModel views embedded weights in its mapping of the file; with view_weights off it copies
// them, and the model survives the file being rewritten in place.
TEST(IoTest, LoadModelCopiesWeightsWhenAsked) {
  TempDir dir;
  const std::string path = (dir.path() / "w.onnx").string();
  const std::string bytes = weightedModel().SerializeAsString();
  { std::ofstream(path, std::ios::binary) << bytes; }
  LoadLimits copy;
  copy.view_weights = false;
  auto copied = loadModel(path, copy);
  ASSERT_TRUE(copied.isOk()) << copied.status().message();
  auto viewed = loadModel(path);
  ASSERT_TRUE(viewed.isOk()) << viewed.status().message();
  auto before = serializeModel(**viewed);
  ASSERT_TRUE(before.isOk());
  viewed->reset();  // its mapping goes with it
  { std::ofstream(path, std::ios::binary | std::ios::trunc) << "rewritten"; }
  auto after = serializeModel(**copied);
  ASSERT_TRUE(after.isOk());
  EXPECT_EQ(*after, *before);
}

TEST(IoTest, SerializingIntoNoBufferIsAnError) {
  auto model = reluChain(1);
  auto written = serializeModelInto(*model, [](size_t) -> char* { return nullptr; });
  ASSERT_FALSE(written.isOk());
  EXPECT_NE(written.status().message().find("no memory"), std::string::npos);
}

TEST(IoTest, UnnamedValuesGetFreshUniqueNames) {
  auto model = parseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] onnxopt_0) => (float[4] y) { y = Relu(onnxopt_0) }
  )");
  ASSERT_TRUE(model.isOk());
  ir::Graph& g = *(*model)->graph;
  ir::Node* relu = g.firstNode();
  ir::Node* neg = B::createNode(g, "Neg", "", {relu->input(0)}, 1, relu);
  B::setInput(relu, 0, neg->output());  // neg's output has no name
  ASSERT_TRUE(ir::verifyModel(**model).isOk());
  auto bytes = serializeModel(**model);
  ASSERT_TRUE(bytes.isOk());
  auto again = parseModelBinary(*bytes);
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ((*again)->graph->firstNode()->output()->name(), "onnxopt_1");
}

TEST(IoTest, ExternalDataIsMappedAndWrittenBack) {
  TempDir dir;
  std::string data(64, '\0');
  for (int i = 0; i < 16; ++i) {
    float f = static_cast<float>(i);
    std::memcpy(data.data() + 4 * i, &f, 4);
  }
  std::ofstream(dir.path() / "w.bin", std::ios::binary) << std::string(8, 'x') << data;
  auto model = loadModel(
      writeExternalModel(dir.path(), {{"location", "w.bin"}, {"offset", "8"}, {"length", "64"}}));
  ASSERT_TRUE(model.isOk()) << model.status().message();
  const ir::Tensor* w = (*model)->graph->initializers()[0]->initializer();
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->externalSource().has_value());
  EXPECT_EQ(w->bytes(), data);

  // Input with external data: output keeps external data (auto mode), in a file of its own.
  SaveOptions opts;
  opts.external_min_bytes = 16;
  std::string out = (dir.path() / "out.onnx").string();
  ASSERT_TRUE(saveModel(**model, out, opts).isOk());
  EXPECT_TRUE(fs::exists(dir.path() / "out.onnx.data"));
  auto back = loadModel(out);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  const ir::Tensor* w2 = (*back)->graph->initializers()[0]->initializer();
  EXPECT_TRUE(w2->externalSource().has_value());
  EXPECT_EQ(w2->bytes(), data);

  // Forced embedding.
  opts.external_data = SaveOptions::ExternalData::kNever;
  std::string embedded = (dir.path() / "embedded.onnx").string();
  ASSERT_TRUE(saveModel(**back, embedded, opts).isOk());
  auto back2 = loadModel(embedded);
  ASSERT_TRUE(back2.isOk());
  EXPECT_FALSE((*back2)->graph->initializers()[0]->initializer()->externalSource().has_value());
  EXPECT_EQ((*back2)->graph->initializers()[0]->initializer()->bytes(), data);
}

TEST(IoTest, ExternalDataErrors) {
  TempDir dir;
  std::ofstream(dir.path() / "w.bin", std::ios::binary) << std::string(64, 'x');
  auto load = [&](std::vector<std::pair<std::string, std::string>> kv) {
    auto model = loadModel(writeExternalModel(dir.path(), kv));
    return model.isOk() ? std::string("<no error>") : model.status().message();
  };
  EXPECT_EQ(load({{"location", "w.bin"}}), "<no error>");
  EXPECT_NE(load({{"location", "/etc/passwd"}}).find("absolute"), std::string::npos);
  EXPECT_NE(load({{"location", "../w.bin"}}).find("leaves the model's folder"), std::string::npos);
  EXPECT_NE(load({{"location", "a/../../w.bin"}}).find("leaves"), std::string::npos);
  EXPECT_NE(load({{"location", "missing.bin"}}).find("not found"), std::string::npos);
  EXPECT_NE(load({{"location", "w.bin"}, {"offset", "32"}}).find("outside"), std::string::npos);
  EXPECT_NE(load({{"location", "w.bin"}, {"length", "32"}}).find("does not match"),
            std::string::npos);
  EXPECT_NE(load({{"location", "w.bin"}, {"offset", "-1"}}).find("non-negative"),
            std::string::npos);
  fs::create_symlink("/etc/hostname", dir.path() / "link.bin");
  EXPECT_NE(load({{"location", "link.bin"}}).find("outside"), std::string::npos);
}

TEST(IoTest, FailedSaveLeavesNoFile) {
  TempDir dir;
  auto model = parseModelText(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[4] x) => (float[4] y) { y = Relu(x) })");
  ASSERT_TRUE(model.isOk());
  // Break an invariant: the exporter must refuse before writing anything.
  ir::Graph& g = *(*model)->graph;
  ir::Node* extra = B::createNode(g, "Neg", "", {g.inputs()[0]}, 1);
  B::setName(extra->output(), "y");  // duplicate name
  std::string out = (dir.path() / "out.onnx").string();
  Status st = saveModel(**model, out);
  EXPECT_FALSE(st.isOk());
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(IoTest, LoadErrorsNameTheFile) {
  TempDir dir;
  auto path = (dir.path() / "bad.onnx").string();
  std::ofstream(path, std::ios::binary) << "\x0a\xff\xff\xff";  // truncated length-delimited field
  auto model = loadModel(path);
  ASSERT_FALSE(model.isOk());
  EXPECT_NE(model.status().message().find(path), std::string::npos);
  EXPECT_FALSE(loadModel((dir.path() / "missing.onnx").string()).isOk());
}

TEST(IoTest, SpecialFilesAreRefusedWithoutBlocking) {
  // open() on a FIFO waited for a writer: the model, a tensor file and external data must be
  // regular files.
  TempDir dir;
  auto fifo = (dir.path() / "fifo.onnx").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto model = loadModel(fifo);
  ASSERT_FALSE(model.isOk());
  EXPECT_NE(model.status().message().find("is a FIFO, not a regular file"), std::string::npos)
      << model.status().message();
  auto tensor = loadTensorFile(fifo);
  ASSERT_FALSE(tensor.isOk());
  EXPECT_NE(tensor.status().message().find("is a FIFO"), std::string::npos);
  auto directory = loadModel(dir.path().string());
  ASSERT_FALSE(directory.isOk());
  EXPECT_NE(directory.status().message().find("is a directory"), std::string::npos);
}

TEST(IoTest, ErrorsEscapeControlCharactersInNames) {
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.add_opset_import()->set_version(17);
  auto* g = proto.mutable_graph();
  g->set_name("g");
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->add_input("a\nopt: error: forged");
  n->add_output("y");
  g->add_output()->set_name("y");
  auto model = parseModelBinary(proto.SerializeAsString());
  ASSERT_FALSE(model.isOk());
  EXPECT_EQ(model.status().message().find('\n'), std::string::npos) << model.status().message();
  EXPECT_NE(model.status().message().find("'a\\nopt: error: forged'"), std::string::npos)
      << model.status().message();
}

TEST(IoTest, DefaultDomainImportedTwiceKeepsTheLast) {
  CollectingDiagnosticSink diagnostics;
  LoadLimits limits;
  limits.diagnostics = &diagnostics;
  auto model = parseModelText(R"(<ir_version: 8, opset_import: ["" : 13, "" : 11]>
      g (float[1,4] x) => (float[4] y) { y = Squeeze <axes = [0]> (x) })",
                              ".", limits);
  ASSERT_TRUE(model.isOk()) << model.status().message();
  ASSERT_EQ((*model)->opset_imports.size(), 1u);
  EXPECT_EQ((*model)->opset_imports[0].version, 11);
  ASSERT_EQ(diagnostics.diagnostics().size(), 1u);
  const Diagnostic& d = diagnostics.diagnostics()[0];
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_EQ(d.node, "");  // the model's own opset_import
  EXPECT_NE(d.message.find("the last, 11, is used"), std::string::npos) << d.message;
}

}  // namespace
}  // namespace onnxopt::io
