"""Turn what a user typed (JSON Schema, regex or KBNF) into KBNF, with errors that say where."""
from __future__ import annotations

from .grammar import GrammarError, compile_grammar
from .json_schema import DEFAULT_MAX_INDENT, DEFAULT_WHITESPACE, SchemaError, regex_to_kbnf, schema_to_kbnf
from .regex import RegexError, compile_regex


class InputError(ValueError):
    """Bad user input; the message names the line/column, JSON pointer or regex offset."""


def to_kbnf(kind: str, text: str, whitespace: str = DEFAULT_WHITESPACE, max_indent: int = DEFAULT_MAX_INDENT) -> str:
    """KBNF for the user's input; ``whitespace``/``max_indent`` apply to JSON Schemas only (regexes and KBNF
    grammars say their own whitespace)."""
    try:
        if kind == "json_schema":
            kbnf = schema_to_kbnf(text, whitespace=whitespace, max_indent=max_indent)
        elif kind == "regex":
            compile_regex(text)
            kbnf = regex_to_kbnf(text)
        elif kind == "cfg":
            kbnf = text
        else:
            raise InputError(f"unknown grammar kind {kind!r}")
        compile_grammar(kbnf)
        return kbnf
    except (GrammarError, SchemaError, RegexError) as e:
        raise InputError(str(e)) from None
