"""The frontend's post-lexer: lark's Indenter, counting tokens and letting the language refuse a
name as it is lexed (transpiler/frontend.py step 2; transpiler/onepass.py runs it inline)."""

from __future__ import annotations

from lark import Token
from lark.indenter import Indenter

from .errors import DSLError
from .limits import DEFAULT_LIMITS


class LimitedIndenter(Indenter):
    """lark's Indenter, counting tokens and handing each NAME to ``check_name`` as it is lexed."""

    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB"]
    CLOSE_PAREN_types = ["RPAR", "RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8  # never used: the pre-scan refuses tabs in indentation
    max_tokens = DEFAULT_LIMITS.max_tokens  # set per parse, under the frontend's lock

    def process(self, stream):
        return super().process(self._check_tokens(stream, self.max_tokens))

    def _check_tokens(self, stream, limit):
        for count, tok in enumerate(stream, 1):
            if count > limit:
                raise DSLError(f"script is too long (more than {limit} tokens)", tok.line, tok.column)
            if tok.type == "NAME":
                self.check_name(tok)
            yield tok

    def check_name(self, tok: Token) -> None:
        """Raise a ``DSLError`` for a name the language refuses."""
