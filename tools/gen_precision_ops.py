#!/usr/bin/env python3
"""Writes include/onnxopt/ir/precision_ops.inc from the onnx package's own schemas (onnx.defs): one
row per version of every default-domain ONNX op with a float tensor in its interface, saying
whether float16 and bfloat16 may stand where float does for its inputs and first output (every
type constraint bound to them that admits tensor(float) admits the other type too), which later
outputs may not (a bit mask: LayerNormalization's Mean and InvStdDev under float16, its stash type
U), which inputs and outputs are declared tensor(float) itself (masks: Resize's scales), which
inputs and outputs share one float-admitting type parameter (the conversion must leave them one
type: LSTM's X, W and initial states, Where's branches, Concat's inputs), and from which model
opset the op's function body allows each type (a runtime without a kernel runs the body).
convert-precision reads the row of the newest version at or below the model's opset; the IR verifier
holds every node to its tied groups.
Run: .venv/bin/python tools/gen_precision_ops.py"""
import pathlib

import onnx
import onnx.defs
import onnx.shape_inference
from onnx import TensorProto, helper

OUT = pathlib.Path(__file__).resolve().parent.parent / "include" / "onnxopt" / "ir" / "precision_ops.inc"


def admits(schema, names, target: str) -> bool | None:
    """Whether every float-admitting constraint among `names` admits `target` (None: none admits
    float)."""
    seen = False
    for c in schema.type_constraints:
        if c.type_param_str not in names:
            continue
        types = set(c.allowed_type_strs)
        if "tensor(float)" in types:
            seen = True
            if f"tensor({target})" not in types:
                return False
    return True if seen else None


def mask(params, predicate) -> int:
    return sum(1 << i for i, p in enumerate(params) if i < 62 and predicate(p))


def tied(schema) -> str:
    """The groups of inputs and outputs bound to one type parameter that admits tensor(float), as
    "i0,i1,o0;i2+,o1": `i`/`o` and the index, `+` a homogeneous variadic parameter (that index and
    every later one), `;` between groups. Groups of one member are left out."""
    groups = []
    for c in schema.type_constraints:
        if "tensor(float)" not in c.allowed_type_strs:
            continue
        members = []
        for kind, params in (("i", schema.inputs), ("o", schema.outputs)):
            for i, p in enumerate(params):
                if p.type_str != c.type_param_str:
                    continue
                variadic = p.option == onnx.defs.OpSchema.FormalParameterOption.Variadic
                if variadic and not p.is_homogeneous:
                    continue  # Loop's and Scan's carried values: each its own type
                members.append(f"{kind}{i}{'+' if variadic else ''}")
        if len(members) > 1 or any(m.endswith("+") for m in members):
            groups.append(",".join(members))
    return ";".join(groups)


def body_ok(s, v: int, target: str) -> bool:
    """Whether the function body of schema `s` at model opset `v` type-checks with its float inputs of `target` (a
    runtime without a kernel for the type runs the body: MeanVarianceNormalization's holds float32 constants,
    Clip-13's uses Where, which allows bfloat16 from opset 16). The body is the newest defined at or below `v`,
    its ops resolved at `v` (as onnxruntime inlines it). True where there is none or no value to try it with."""
    versions = [fv for fv in s.all_function_opset_versions if fv <= v]
    if not versions:
        return True
    body_version = max(versions)
    ins = []
    for p in s.inputs:
        c = next((c for c in s.type_constraints if c.type_param_str == p.type_str), None)
        allowed = list(c.allowed_type_strs) if c else [p.type_str]
        t = f"tensor({target})" if "tensor(float)" in allowed else ("tensor(int64)" if "tensor(int64)" in allowed else allowed[0])
        elem = getattr(TensorProto, t[len("tensor("):-1].upper(), None) if t.startswith("tensor(") else None
        if elem is None:
            return True  # a sequence or optional input: not tried
        ins.append((p.name, elem))
    node = helper.make_node(s.name, [n for n, _ in ins], [o.name for o in s.outputs])
    try:
        if s.has_context_dependent_function:
            tps = [helper.make_tensor_type_proto(t, None).SerializeToString() for _, t in ins]
            raw = s.get_context_dependent_function_with_opset_version(body_version, node.SerializeToString(), tps)
        else:
            raw = s.get_function_with_opset_version(body_version)
    except Exception:
        return True
    if not raw:
        return True
    f = onnx.FunctionProto.FromString(raw)
    for n in f.node:
        kept = []
        for a in n.attribute:
            if a.ref_attr_name:
                schema_attr = s.attributes[a.ref_attr_name]
                if schema_attr.required:
                    return True  # no value to try the body with
                if schema_attr.default_value.type == onnx.AttributeProto.UNDEFINED:
                    continue  # an optional attribute without default: absent
                name = a.name
                a.CopyFrom(schema_attr.default_value)
                a.name = name
            kept.append(a)
        del n.attribute[:]
        n.attribute.extend(kept)
    g = helper.make_graph(list(f.node), "body", [helper.make_tensor_value_info(n, t, None) for n, t in ins],
                          [helper.make_value_info(o, onnx.TypeProto()) for o in f.output])
    imports = [o for o in f.opset_import if o.domain not in ("", "ai.onnx")] + [helper.make_opsetid("", v)]
    m = helper.make_model(g, opset_imports=imports)
    try:
        onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        return True
    except Exception:
        return False


def body_allows_from(s, last: int, target: str) -> int:
    """The lowest model opset from which, up to `last`, the function body of `s` allows `target` (0: always)."""
    if not (s.has_function or s.has_context_dependent_function):
        return 0
    bad = [v for v in range(s.since_version, last + 1) if not body_ok(s, v, target)]
    return max(bad) + 1 if bad else 0


def main() -> None:
    rows = []
    schemas = sorted(onnx.defs.get_all_schemas_with_history(), key=lambda s: (s.name, s.since_version))
    newest = onnx.defs.onnx_opset_version()
    for k, s in enumerate(schemas):
        if s.domain not in ("", "ai.onnx") or s.deprecated:
            continue
        interface = {p.type_str for p in s.inputs}
        if s.outputs:
            interface.add(s.outputs[0].type_str)
        fixed_in = mask(s.inputs, lambda p: p.type_str == "tensor(float)")
        fixed_out = mask(s.outputs, lambda p: p.type_str == "tensor(float)")
        ok = {t: admits(s, interface, t) for t in ("float16", "bfloat16")}
        if ok["float16"] is None and not fixed_in and not fixed_out:
            continue  # no float tensor in its interface
        later = [n.since_version for n in schemas[k + 1:] if n.name == s.name and n.domain == s.domain]
        last = min(later) - 1 if later else newest
        body_from = {t: body_allows_from(s, last, t) if ok[t] else 0 for t in ("float16", "bfloat16")}
        restricted = {t: mask(s.outputs[1:], lambda p, t=t: admits(s, {p.type_str}, t) is False) << 1
                      for t in ("float16", "bfloat16")}
        rows.append(f"PRECISION_OP({s.name}, {s.since_version}, {int(bool(ok['float16']))}, "
                    f"{restricted['float16']}, {int(bool(ok['bfloat16']))}, {restricted['bfloat16']}, "
                    f"{fixed_in}, {fixed_out}, \"{tied(s)}\", {body_from['float16']}, {body_from['bfloat16']})")
    lines = [f"// Generated by tools/gen_precision_ops.py from onnx {onnx.__version__}; do not edit.",
             "// PRECISION_OP(op, since version, float16 allowed, its restricted outputs, bfloat16",
             "//              allowed, its restricted outputs, float inputs, float outputs, tied, float16",
             "//              by its function body from, bfloat16 likewise): a",
             "// restricted output (bit i: output i) keeps the node float32 when used; the inputs and",
             "// outputs declared tensor(float) itself (bit i) stay float32; tied lists the groups of",
             "// inputs (iN) and outputs (oN) of one float-admitting type parameter, `+` for a variadic",
             "// one (N and later), `;` between groups; the function body's opsets (0: any) are those",
             "// from which the body, which a runtime without a kernel for the type runs, allows it."]
    OUT.write_text("\n".join(lines + rows) + "\n")
    print(f"wrote {OUT} ({len(rows)} op versions)")


if __name__ == "__main__":
    main()
