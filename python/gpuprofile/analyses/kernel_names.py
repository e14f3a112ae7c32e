"""Kernel names people can read: the function a demangled C++ name calls, not its return type,
qualifiers, template arguments or parameter list.

``std::enable_if<!(false), void>::type internal::gemvx::kernel<int, ...>(...)`` reads
``internal::gemvx::kernel``. Kernels that are one generic wrapper around the work they do keep
the argument that says what that is: ``at::native::vectorized_elementwise_kernel<AbsFunctor>``
(the functor of an elementwise kernel), ``cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_...>``
(the CUTLASS configuration), ``ck_tile::kentry<FmhaBwdDQDKDVKernel>``; without it two different
kernels would read as one. Names that are no C++ signature (TensorRT layers, Triton kernels)
are kept, only shortened.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

import numpy as np
import pandas as pd

from gpuprofile.analyses.names import per_category

# A wrapper whose first informative template argument names the work it runs.
_WRAPPER = re.compile(
    r"(^|::)(Kernel\d*|kentry|\w*elementwise_kernel\w*|multi_tensor_apply_kernel|reduce_kernel"
    r"|index_elementwise_kernel|distribution_elementwise_grid_stride_kernel)$"
)
# ... and an argument that is another wrapper, to look inside of.
_IMPL = re.compile(
    r"(^|::)(gpu_kernel_impl\w*|ReduceOp|TensorListMetadata|func_wrapper_t|[AB]?UnaryFunctor"
    r"|BinaryFunctor)$"
)
_SCALAR = re.compile(
    r"^((unsigned |signed )?(int|long|short|char|float|double|bool)|c10::(Half|BFloat16)"
    r"|__nv_bfloat16|__half|__hip_bfloat16)$"
)
_LAMBDA = re.compile(r"::(operator\b|\{lambda).*$")
# Template arguments that say nothing of the work: numbers, scalar types, targets, flags.
_UNINFORMATIVE = re.compile(
    r"^(-?\d+\w*|true|false|(unsigned |signed )?(int|long|short|char|float|double|bool|void)"
    r"|c10::(Half|BFloat16|complex)|__nv_\w+|__hip_\w+|std::array|at::detail::Array|\w*gfx\d+\w*"
    r"|\(\w[\w:]*\)\d+|OffsetCalculator|TrivialOffsetCalculator|\w*Loader\w*|\w*Storer\w*)$"
)
# A mangled nested name: "_ZN", CV-qualifiers, then <length><identifier> pairs.
_MANGLED_NESTED = re.compile(r"_ZN[rVK]*")
_LENGTH = re.compile(r"\d+")
_WORD = re.compile(r"[A-Za-z_]\w*|\d+\w*")
_PART = re.compile(r"[A-Za-z0-9]+")
_NAMESPACE = re.compile(r"\b\w+::")
# An anonymous namespace as demanglers write it, and as Nsight Compute's CSV does ("<unnamed>",
# its "<" sometimes cut: "void unnamed>::gemm_naive_kernel").
_ANONYMOUS = re.compile(r"\(anonymous namespace\)(::)?|<?unnamed>(::)?")
_KEYWORDS = frozenset(
    ("void", "const", "static", "inline", "extern", "unsigned", "signed", "__global__", "typename")
)


def short_kernel_name(name: str, limit: int = 60) -> str:
    """A kernel name as a person reads it (see the module docstring), at most ``limit``
    characters: a longer one keeps its head and its tail, which tell kernels apart."""
    return clipped_name(readable_kernel_name(name), limit)


def readable_kernel_name(name: str) -> str:
    """short_kernel_name's answer at any length: the function the name calls, unclipped
    (kernel_name_parts' first answer)."""
    return kernel_name_parts(name)[0]


def parts_per_name(names: pd.Series) -> np.ndarray:
    """Per category of a kernel name column, then for a missing name (read as "nan", as str()
    spells it), a row of kernel_name_parts (an object array of two columns): one parse per
    name for its class (kernel_kind), its label (Analysis.kernel_labels) and launch_overhead's
    short names, kept per categories as names.per_category keeps its answers."""
    return per_category(names, "kernel name parts", kernel_name_parts, object, _NAN_PARTS)


def kernel_name_parts(name: str) -> tuple[str, str]:
    """(readable_kernel_name, qualified_function) of a name, from one parse of it: the
    signature's last top-level word before its parameters, which both read (a trace's kernel
    names run to kilobytes, and each is read for its class and for its label)."""
    text = _ANONYMOUS.sub("", mangled_function(name) or name)
    if "(" not in text and "::" not in text and "<" not in text:
        plain = text.strip()
        return plain or name, plain
    head = _before_parameters(text)
    tokens = [t for t in _top_level_split(head, " ") if t and t not in _KEYWORDS]
    if not tokens:
        return text.strip() or name, text.strip()
    base, arguments = _template(tokens[-1])
    readable = text
    if ("(" in text or "::" in text) and " + " not in text:
        readable = _with_telling_argument(base, arguments) or text
    return readable.strip() or name, base


def clipped_name(text: str, limit: int) -> str:
    """A readable_kernel_name at most ``limit`` characters: a longer one loses its namespaces,
    then its middle, keeping the head and the tail that tell kernels apart."""
    if len(text) > limit and "::" in text.split("<", 1)[0]:
        text = text.split("<", 1)[0].rsplit("::", 1)[-1] + text[len(text.split("<", 1)[0]) :]
    if len(text) <= limit:
        return text
    head = (limit - 3) // 2
    return text[:head] + "..." + text[len(text) - (limit - 3 - head) :]


def short_kernel_names(
    names: Iterable[str], limit: int = 60, readable: dict[str, str] | None = None
) -> dict[str, str]:
    """Each name's short name, told apart from every other name of the set: where two names
    would read alike (the same function at another vector width or element type, or a long
    name cut in its middle), each gets the words of its name that only it has, in brackets:
    ``elementwise_kernel<MulFunctor<float>> [4, BFloat16]`` beside ``... [2, float]``. Names
    still alike after that are told apart within their own group the same way, then numbered
    in the order of their full names. readable: readable_kernel_name's answers, where the
    caller has them."""
    by_short: defaultdict[str, list[str]] = defaultdict(list)
    for name in dict.fromkeys(names):
        text = readable[name] if readable is not None else readable_kernel_name(name)
        by_short[clipped_name(text, limit)].append(name)
    labels: dict[str, str] = {}
    for short, group in by_short.items():
        told = _told_apart(group, {name: _words(name) for name in group}, max(limit // 3, 8))
        for name in group:
            labels[name] = f"{short} [{'; '.join(told[name])}]" if told[name] else short
    return labels


def _told_apart(
    group: list[str], words: dict[str, list[str]], room: int, depth: int = 0
) -> dict[str, list[str]]:
    """Per name of a group that reads alike, the parts that tell it from the others: its own
    words (those not common to the whole group, cut to ``room`` characters), then, where that
    still reads alike, what tells it within that smaller group; "#k" as a last resort."""
    if len(group) == 1:
        return {group[0]: []}
    common = Counter(words[group[0]])
    for name in group[1:]:
        common &= Counter(words[name])
    parts: dict[str, str] = {}
    for name in group:
        own = Counter(words[name]) - common
        text = ", ".join(w for w in dict.fromkeys(words[name]) if own[w])
        parts[name] = text if len(text) <= room else text[: room - 1] + "…"
    alike: defaultdict[str, list[str]] = defaultdict(list)
    for name in group:
        alike[parts[name]].append(name)
    told: dict[str, list[str]] = {}
    for part, same in alike.items():
        if len(same) == 1:
            told[same[0]] = [part] if part else []
            continue
        if depth < 2 and (part or len(same) < len(group)):
            deeper = _told_apart(same, words, room, depth + 1)
        else:
            deeper = {name: [f"#{i}"] for i, name in enumerate(sorted(same), 1)}
        for name in same:
            told[name] = ([part] if part else []) + deeper[name]
    return told


def _words(name: str) -> list[str]:
    """The words of a kernel's called function (split at "_" too: a long name cut in its
    middle differs there) and its template arguments (whole identifiers), namespaces dropped,
    in order: ``k_fwd<4, at::F<c10::Half>>(...)`` -> ["k", "fwd", "4", "F", "Half"]."""
    text = _ANONYMOUS.sub("", mangled_function(name) or name)
    if "(" in text or "<" in text:
        text = _top_level_split(_before_parameters(text), " ")[-1]
    base, _, arguments = _NAMESPACE.sub("", text).partition("<")
    return _PART.findall(base) + _PART.findall(arguments)


def mangled_function(name: str) -> str | None:
    """The function a mangled name the reader could not demangle calls (a name cut short by
    the tracer, or a mangling c++filt does not know), read from its nested name alone:
    ``_ZN7sgl_hip10activation18act_and_mul_kernelI...`` is ``sgl_hip::activation::
    act_and_mul_kernel<…>``, its template arguments elided; None for any other name."""
    match = _MANGLED_NESTED.match(name)
    if match is None:
        return None
    parts, at = [], match.end()
    while (length := _LENGTH.match(name, at)) is not None:
        start = length.end()
        size = int(length.group())
        if size == 0 or start + size > len(name):
            return None
        parts.append(name[start : start + size])
        at = start + size
    if not parts:
        return None
    parts = ["(anonymous namespace)" if p.startswith("_GLOBAL__N") else p for p in parts]
    return "::".join(parts) + ("<…>" if name.startswith("I", at) else "")


def qualified_function(name: str) -> str:
    """The called function of a kernel name with its namespaces and no template arguments
    (``deep_ep::intranode::dispatch``); a name that is no C++ signature, itself."""
    return kernel_name_parts(name)[1]


def _with_telling_argument(base: str, arguments: list[str]) -> str:
    """The called function (base, its template arguments apart) with its telling template
    argument, where it is a wrapper around the work it runs."""
    if _WRAPPER.search(base):
        told = _telling(arguments)
        if told:
            return f"{base}<{told}>"
    return base


def _before_parameters(text: str) -> str:
    """The text before its parameter list: the first "(" outside template brackets (a cast
    inside a template argument, "(cub::BlockLoadAlgorithm)3", is no parameter list)."""
    depth = 0
    # Only the brackets change anything: jumped to, not walked to (names run to kilobytes).
    for found in _BEFORE_PARAMETERS.finditer(text):
        ch = found.group()
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0 and found.start() > 0:
            return text[: found.start()]
    return text


def _top_level_split(text: str, sep: str) -> list[str]:
    """text split at ``sep`` (" " or ",") outside <...> and (...)."""
    parts: list[str] = []
    current: list[str] = []  # the pieces of the part being read
    depth = 0
    # Between brackets, a stretch at depth 0 is split by str.split: Python steps from bracket
    # to bracket only, not from separator to separator.
    for i, token in enumerate(_BRACKETS.split(text)):
        if i % 2:  # a bracket
            depth = depth + 1 if token in "<(" else max(0, depth - 1)
            current.append(token)
        elif depth == 0 and sep in token:
            pieces = token.split(sep)
            parts.append("".join([*current, pieces[0]]).strip())
            parts += [p.strip() for p in pieces[1:-1]]
            current = [pieces[-1]]
        else:
            current.append(token)
    parts.append("".join(current).strip())
    return parts


def _template(text: str) -> tuple[str, list[str]]:
    """A name without its template arguments (at every level), and its own last top-level
    argument list: ``a::b<x, y<z>>::c`` -> ("a::b::c", []); ``k<4, F<int>>`` -> ("k", ["4",
    "F<int>"])."""
    base: list[str] = []  # the stretches outside every <...>
    arguments: list[str] = []
    depth, start, outside = 0, 0, 0
    for found in _ANGLES.finditer(text):
        i = found.start()
        if found.group() == "<":
            if depth == 0:
                base.append(text[outside:i])
                start = i + 1
            depth += 1
        elif depth:  # a ">" at depth 0 is a character of the name
            depth -= 1
            if depth == 0:
                arguments = _top_level_split(text[start:i], ",")
                outside = i + 1
    if depth:  # a name cut short inside its arguments (a trace's length limit)
        arguments = _top_level_split(text[start:], ",")
    else:
        base.append(text[outside:])
    return "".join(base).strip(), arguments


_BEFORE_PARAMETERS = re.compile(r"[<>(]")
_BRACKETS = re.compile(r"([<>()])")
_ANGLES = re.compile(r"[<>]")


def _telling(arguments: list[str]) -> str:
    """The first argument that says what a wrapper runs, without namespaces, with its element
    type where it has one (``AbsFunctor<long>``); implementation wrappers are looked inside
    (``gpu_kernel_impl<BUnaryFunctor<float, float, float, MulFunctor<float>>>`` reads
    ``MulFunctor<float>``); "" when no argument tells."""
    for argument in arguments:
        argument = argument.strip()
        name, inner = _template(argument)
        name = _LAMBDA.sub("", _before_parameters(name).strip())
        last = name.rsplit("::", 1)[-1]
        if not last or _UNINFORMATIVE.match(last) or _UNINFORMATIVE.match(argument):
            continue
        if _IMPL.search(name):
            if inside := _telling(inner):
                return inside
            continue
        scalar = inner[0].strip() if inner and _SCALAR.match(inner[0].strip()) else ""
        return f"{last}<{scalar.rsplit('::', 1)[-1]}>" if scalar else last
    return ""


_NAN_PARTS = kernel_name_parts("nan")
