"""Python source utilities (``ast`` / ``tokenize``): list, extract and splice functions, rename identifiers.

Extraction returns the *function* at a commit (the official tracer's ``get_function_code_at_commit``
returns the whole historical file because of an early ``return``; spec §4, fix 1).
"""
from __future__ import annotations

import ast
import io
import keyword
import textwrap
import tokenize
from dataclasses import dataclass


@dataclass(frozen=True)
class FuncDef:
    name: str  # bare name (the paper's fm_name: a method's name without its class)
    qualname: str  # Class.method or function
    kind: str  # "function" | "method"
    start: int  # first line (decorators included), 1-based
    end: int  # last line, 1-based
    indent: int  # column of the ``def``


def parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def functions(source: str) -> list[FuncDef]:
    """Module-level functions and methods of module-level classes (nested functions are part of their parent)."""
    tree = parse(source)
    if tree is None:
        return []
    out: list[FuncDef] = []

    def add(node, qual: str, kind: str):
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        out.append(FuncDef(node.name, qual, kind, start, node.end_lineno, node.col_offset))

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(node, node.name, "function")
        elif isinstance(node, ast.ClassDef):
            for child in node.body:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    add(child, f"{node.name}.{child.name}", "method")
    return out


def find(source: str, qualname: str) -> FuncDef | None:
    for f in functions(source):
        if f.qualname == qualname:
            return f
    # fall back to the bare name when unique (answers name methods without their class)
    named = [f for f in functions(source) if f.name == qualname.split(".")[-1]]
    return named[0] if len(named) == 1 else None


def extract(source: str, qualname: str) -> str | None:
    """The dedented source of one function or method, or None."""
    f = find(source, qualname)
    if f is None:
        return None
    lines = source.splitlines()[f.start - 1: f.end]
    return textwrap.dedent("\n".join(lines)) + "\n"


def normalise(code: str | None) -> str:
    """Code modulo formatting (for 'did this function change?')."""
    if code is None:
        return ""
    tree = parse(textwrap.dedent(code))
    return ast.dump(tree) if tree is not None else code.strip()


def splice(source: str, qualname: str, new_code: str) -> str:
    """Replace one function/method in ``source`` by ``new_code`` (re-indented to the original's column)."""
    f = find(source, qualname)
    if f is None:
        raise KeyError(f"{qualname} not found")
    lines = source.splitlines()
    body = textwrap.indent(textwrap.dedent(new_code).rstrip("\n"), " " * f.indent)
    out = lines[: f.start - 1] + body.splitlines() + lines[f.end:]
    return "\n".join(out) + ("\n" if source.endswith("\n") else "")


def identifiers(code: str) -> list[str]:
    """NAME tokens (not keywords) in order of first appearance."""
    seen: dict[str, None] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
                seen.setdefault(tok.string, None)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return list(seen)


def rename(code: str, mapping: dict[str, str]) -> str:
    """Rename NAME tokens (variables, parameters, keywords, attributes) by ``mapping``; layout is kept."""
    if not mapping:
        return code
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code
    lines = code.splitlines(keepends=True)
    # edit from the end so columns stay valid
    for tok in reversed(toks):
        if tok.type == tokenize.NAME and tok.string in mapping:
            (r, c0), (_, c1) = tok.start, tok.end
            line = lines[r - 1]
            lines[r - 1] = line[:c0] + mapping[tok.string] + line[c1:]
    return "".join(lines)


def module_symbols(source: str) -> set[str]:
    """Names bound at module level: defs, classes, assignments and imports."""
    tree = parse(source)
    out: set[str] = set()
    if tree is None:
        return out
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    return out


def attributes(source: str) -> set[str]:
    """Attribute names used anywhere (``x.attr``), e.g. the fields a class sets on ``self``."""
    tree = parse(source)
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} if tree else set()


def params_of(code: str) -> list[str]:
    tree = parse(textwrap.dedent(code))
    if tree is None or not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    a = tree.body[0].args
    return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]


def imports(source: str) -> list[tuple[str, str | None, int]]:
    """(module, imported name or None, level) for each import in the module."""
    tree = parse(source)
    out = []
    if tree is None:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, 0) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out += [(node.module or "", a.name, node.level) for a in node.names]
    return out
