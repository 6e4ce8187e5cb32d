"""The per-call fast path of a planned runner, written out from its Operands at plan time.

Each run of a planned call checks that every tensor has the planned dtype, shape, device and
contiguity and that its address is aligned, then writes the addresses (and a cache's leading
size) into the kernel's parameter struct, and, where the caller gave out= and lse=, checks that
they overlap no input. Each tensor attribute read costs ~50-150 ns of host time, and a loop over
the Operands adds its own cost per tensor (about 2 us a call, measured against the hand-written
checks), so the code is generated: straight-line, each attribute read once, the planned values
as constants, exactly what one would write by hand for one family. Anything it does not accept
takes the general path (kgen.mla.operands.check_operands), which names the bad tensor.
"""

from __future__ import annotations

import ctypes
import math

import torch

from kgen.mla.operands import Operand

HEADER = "def bind(p, inputs, out, lse, given, extra_lo, extra_hi):"


def largest(params_type: type, field: str) -> int:
    """The largest value a signed integer field of a ctypes struct holds."""
    kind = dict(params_type._fields_)[field]
    return (1 << (8 * ctypes.sizeof(kind) - 1)) - 1


def binder(
    inputs: tuple[Operand, ...],
    outputs: tuple[Operand, Operand],
    planned: dict[str, int],
    index: int,
    params_type: type,
):
    """bind(p, inputs, out, lse, given, extra_lo, extra_hi) for these Operands and a parameter
    struct of `params_type`: False where a tensor is not as planned (nothing usable bound); else
    the addresses bound into `p` and True, or None where given outputs may overlap an input or
    [extra_lo, extra_hi) (the caller then runs the general overlap check, which names the pair).
    An optional input may be None (address 0), an absent one must be; one given with fewer
    dimensions (min_dims) has its strides written too. Returns (bind, its source)."""
    consts: dict[str, object] = {"I": index}
    lines, checks, spans = [], [], []
    names = [f"x{i}" for i in range(len(inputs))]
    for i, op in enumerate(inputs):
        x = names[i]
        if op.absent:
            checks.append(f"{x} is None")
            continue
        consts[f"D{i}"] = op.torch_dtype
        if op.count:  # a free leading size: the rest of the shape as literals
            assert not op.min_dims, op.name
            rest = [f"{x}_{j}" for j in range(1, len(op.shape))]
            dims = ", ".join([f"n{i}", *rest])
            nothing = ", ".join(["0"] * len(op.shape))
            unpack = f"({nothing}) if {x} is None else {x}.shape" if op.optional else f"{x}.shape"
            lines.append(f"{dims} = {unpack}")
            shape = " and ".join(f"{d} == {op.shape[j + 1]}" for j, d in enumerate(rest))
        elif op.min_dims:  # each shape it may have, with the strides (in fields' units) it binds
            full = op.planned_shape(planned)
            unit = op.elem_bytes if op.stride_unit == "bytes" else 1
            consts[f"SS{i}"] = {
                torch.Size(full[:n]): tuple(
                    s * unit for s in (*op.planned_strides(full[:n]), *[0] * (len(full) - n))
                )[: len(op.strides)]
                for n in range(op.min_dims, len(full) + 1)
            }
            shape = f"(s{i} := {x}.shape) in SS{i}"
        else:
            consts[f"S{i}"] = torch.Size(op.planned_shape(planned))
            shape = f"{x}.shape == S{i}"
        if op.page_stride:  # pages padded past their elements: the planned strides exactly
            consts[f"ST{i}"] = op.planned_strides((1, *op.shape[1:]))
            layout = f"{x}.stride() == ST{i}"
        else:
            layout = f"{x}.is_contiguous()"
        check = f"{x}.dtype is D{i} and {shape} and {x}.get_device() == I and {layout}"
        checks.append(f"({x} is None or ({check}))" if op.optional else check)
    outs = []
    for name, op in zip(("out", "lse"), outputs, strict=True):
        consts[f"D{name}"] = op.torch_dtype
        consts[f"S{name}"] = torch.Size(op.planned_shape(planned))
        outs.append(
            f"{name}.dtype is D{name} and {name}.shape == S{name} and "
            f"{name}.get_device() == I and {name}.is_contiguous()"
        )
    checks.append(f"(not given or ({' and '.join(outs)}))")

    body = [f"{', '.join(names)}, = inputs", *lines, "if not (", *[f"    {c} and" for c in checks]]
    body[-1] = body[-1].removesuffix(" and")
    body.append("):")
    body.append("    return False")
    code = ["try:", *[f"    {line}" for line in body]]
    code += ["except (AttributeError, TypeError, ValueError):", "    return False"]

    misaligned, writes = [], []
    for i, op in enumerate(inputs):
        if op.absent:
            continue
        x = names[i]
        code.append(
            f"a{i} = 0 if {x} is None else {x}.data_ptr()"
            if op.optional
            else f"a{i} = {x}.data_ptr()"
        )
        if op.align > 1:
            misaligned.append(f"(a{i} & {op.align - 1})")
        writes.append(f"p.{op.field} = a{i}")
        if op.min_dims and op.strides:
            fields = ", ".join(f"p.{f}" for f in op.strides)
            bind = f"{fields}, = SS{i}[s{i}]"
            writes.append(f"if {x} is not None:\n    {bind}" if op.optional else bind)
        if op.count:
            page = op.page_stride or math.prod(op.shape[1:])
            size = f"n{i} * {page * op.elem_bytes}"
            field, factor = op.count
            most = largest(params_type, field)
            consts[f"MOST{i}"] = min(most, op.count_most) if op.count_most else most
            code.append(f"c{i} = n{i} * {factor}" if factor != 1 else f"c{i} = n{i}")
            misaligned.append(f"c{i} > MOST{i}")
            writes.append(f"p.{field} = c{i}")
        else:
            size = math.prod(op.planned_shape(planned)) * op.elem_bytes
        spans.append((f"a{i}", f"a{i} + {size}"))
    code += ["ao = out.data_ptr()", "al = lse.data_ptr()"]
    if outputs[0].align > 1:
        misaligned.append(f"(ao & {outputs[0].align - 1})")
    if misaligned:
        code += [f"if {' or '.join(misaligned)}:", "    return False"]
    code += [line for w in writes for line in w.split("\n")]
    code += ["p.out = ao", "p.lse = al", "if not given:", "    return True"]

    out_bytes, lse_bytes = (math.prod(op.planned_shape(planned)) * op.elem_bytes for op in outputs)
    code += [f"ao_hi = ao + {out_bytes}", f"al_hi = al + {lse_bytes}"]
    apart = ["(ao_hi <= al or al_hi <= ao)"]
    for lo, hi in [*spans, ("extra_lo", "extra_hi")]:
        apart.append(f"({hi} <= ao or ao_hi <= {lo}) and ({hi} <= al or al_hi <= {lo})")
    code += ["return (", *[f"    {a} and" for a in apart]]
    code[-1] = code[-1].removesuffix(" and")
    code.append(") or None")

    source = "\n".join([HEADER, *[f"    {line}" for line in code]]) + "\n"
    namespace = dict(consts)
    exec(compile(source, "<kgen.mla.fastpath>", "exec"), namespace)  # noqa: S102
    return namespace["bind"], source
