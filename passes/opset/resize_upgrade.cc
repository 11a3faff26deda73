// Resize and Upsample across their signature changes, for upgrade-opset. Each step keeps what
// onnxruntime computes; its CPU kernel is also what pins down Resize-10's rounding, which the
// spec leaves open.
//
//   Upsample-7<scales=s>(x)      -> Upsample-9(x, s)                                     (9)
//   Upsample-9(x, s)             -> Resize-10(x, s)                                      (10)
//   Resize-10<mode>(x, s)        -> Resize-11<mode, asymmetric, nearest_mode=r>(x, [], s) (11)
//       r = floor when every scale is >= 1, ceil when every scale is <= 1: before opset 11
//       onnxruntime truncates x / scale on axes that grow and rounds it up on axes that shrink
//       (Upsample's scales are >= 1). An empty roi: only tf_crop_and_resize reads it.
//   Resize-11(x, roi, s, sizes)  -> Resize-13(x, "", s, sizes) with roi kept only for
//       tf_crop_and_resize, and the empty one of scales and sizes made absent      (13)
//       tf_half_pixel_for_nn (gone at 13) maps x to h + 1/2, h the half_pixel coordinate:
//       round_prefer_floor(h + 1/2) = ceil(h) and floor(h + 1/2) = round_prefer_ceil(h).
//   Resize-13 -> 18 -> 19: the added attributes (antialias, axes, keep_aspect_ratio_policy)
//       default to the old behaviour and 19 only adds a mode: nothing to rewrite.
#include "resize_upgrade.h"

#include <algorithm>

#include "onnxopt/pass/matchers.h"

namespace onnxopt::passes {
namespace {

std::string attrString(const ir::Node& n, const char* name, const char* fallback) {
  const ir::Attribute* a = n.findAttribute(name);
  return a != nullptr ? a->s : fallback;
}

void setString(ir::Node* n, const char* name, std::string value, rewrite::Rewriter& rw) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::kString;
  a.s = std::move(value);
  rw.setAttribute(n, std::move(a));
}

ir::Value* inputAt(const ir::Node& n, size_t i) {
  return i < n.numInputs() ? n.input(i) : nullptr;
}

/// A tensor known to hold no element: Resize-11's placeholder for whichever of scales and sizes
/// is not used.
bool knownEmpty(const ir::Value* v) {
  if (v == nullptr) return false;
  if (auto shape = pass::staticShape(v)) {
    return std::find(shape->begin(), shape->end(), 0) != shape->end();
  }
  auto t = pass::constantTensor(v);
  return t && t->numElements() == std::optional<int64_t>(0);
}

/// The Resize-11 nearest_mode that rounds as a Resize-10 or Upsample node does in onnxruntime;
/// empty when its scales are not constant or both grow and shrink axes.
std::string opset10Rounding(const ir::Node& n) {
  if (n.opType() == "Upsample") return "floor";
  auto t = pass::constantTensor(inputAt(n, 1));
  auto scales = t ? pass::floatValues(*t) : std::nullopt;
  if (!scales) return {};
  auto all = [&](auto pred) { return std::all_of(scales->begin(), scales->end(), pred); };
  if (all([](double s) { return s >= 1.0; })) return "floor";
  if (all([](double s) { return s <= 1.0; })) return "ceil";
  return {};
}

std::string blockerAt13(const ir::Node& n) {
  std::string mode = attrString(n, "mode", "nearest");
  std::string nearest = attrString(n, "nearest_mode", "round_prefer_floor");
  if (attrString(n, "coordinate_transformation_mode", "half_pixel") == "tf_half_pixel_for_nn" &&
      (mode != "nearest" || (nearest != "round_prefer_floor" && nearest != "floor"))) {
    return "tf_half_pixel_for_nn (gone at opset 13) with mode " + mode + " and nearest_mode " +
           nearest + " has no equivalent";
  }
  const ir::Value* scales = inputAt(n, 2);
  const ir::Value* sizes = inputAt(n, 3);
  if (sizes != nullptr && !knownEmpty(sizes) && scales != nullptr && !knownEmpty(scales))
    return "both scales and sizes may be non-empty";
  return {};
}

/// Makes input `i` absent, erasing the initializer it was when nothing else reads it.
void dropInput(ir::Node* n, size_t i, rewrite::Rewriter& rw) {
  ir::Value* v = inputAt(*n, i);
  if (v == nullptr) return;
  rw.setInput(n, i, nullptr);
  if (v->kind() == ir::Value::Kind::kInitializer && !v->hasUses()) rw.eraseInitializer(v);
}

void upgradeTo11(ir::Node* n, rewrite::Rewriter& rw) {
  std::string rounding = opset10Rounding(*n);
  // Unknown scales pass the blocker only when the node was an Upsample (scales >= 1).
  if (rounding.empty()) rounding = "floor";
  ir::Value* scales = n->input(1);
  ir::Value* roi = rw.createInitializer(*n->owningGraph(), "roi",
                                        pass::makeFloatTensor(ir::DataType::kFloat, {0}, {}));
  rw.setInput(n, 1, roi);
  rw.addInput(n, scales);
  setString(n, "coordinate_transformation_mode", "asymmetric", rw);
  if (attrString(*n, "mode", "nearest") == "nearest") setString(n, "nearest_mode", rounding, rw);
}

void upgradeTo13(ir::Node* n, rewrite::Rewriter& rw) {
  std::string transform = attrString(*n, "coordinate_transformation_mode", "half_pixel");
  if (transform == "tf_half_pixel_for_nn") {
    bool floor = attrString(*n, "nearest_mode", "round_prefer_floor") == "floor";
    setString(n, "coordinate_transformation_mode", "half_pixel", rw);
    setString(n, "nearest_mode", floor ? "round_prefer_ceil" : "ceil", rw);
  }
  ir::Value* sizes = inputAt(*n, 3);
  if (sizes != nullptr && knownEmpty(sizes)) {
    dropInput(n, 3, rw);
    rw.removeInput(n, 3);
  } else if (sizes != nullptr) {
    dropInput(n, 2, rw);  // the blocker made sure scales is empty
  }
  if (transform != "tf_crop_and_resize") dropInput(n, 1, rw);
}

}  // namespace

std::string resizeUpgradeBlocker(const ir::Node& n, int version) {
  std::string mode = attrString(n, "mode", "nearest");
  if (n.opType() == "Upsample") {
    if (mode != "nearest" && mode != "linear") return "Upsample mode '" + mode + "'";
    if (version == 9 && n.findAttribute("scales") == nullptr) return "Upsample without scales";
    return {};  // no sizes, scales >= 1: every later Resize step holds
  }
  if (version == 11 && mode == "nearest" && opset10Rounding(n).empty()) {
    return "Resize-10 rounds nearest by the direction of scales that are not constant or both "
           "grow and shrink axes";
  }
  if (version == 13) return blockerAt13(n);
  return {};
}

void upgradeResize(ir::Node* n, int version, rewrite::Rewriter& rw) {
  if (n->opType() == "Upsample" && version == 9) {
    const ir::Attribute* a = n->findAttribute("scales");
    std::vector<double> scales(a->floats.begin(), a->floats.end());
    auto dims = std::vector<int64_t>{static_cast<int64_t>(scales.size())};
    rw.addInput(n, rw.createInitializer(*n->owningGraph(), "scales",
                                        pass::makeFloatTensor(ir::DataType::kFloat, dims, scales)));
    rw.removeAttribute(n, "scales");
  } else if (n->opType() == "Upsample" && version == 10) {
    rw.setOpType(n, "Resize", n->domain());
  } else if (version == 11) {
    upgradeTo11(n, rw);
  } else if (version == 13) {
    upgradeTo13(n, rw);
  }
}

}  // namespace onnxopt::passes
