"""What the command line shows and asks on a terminal: text made safe to display, and the
approver that asks y/N on the controlling terminal."""

from __future__ import annotations

import os
import unicodedata

from runtime.errors import ApprovalDeniedError
from runtime.fs import safeio

# Shown escaped in approval prompts: they could make a path read as another one.
_INVISIBLE = {"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"}


def printable(text: str) -> str:
    """`text` with invisible and direction-changing characters written as \\uXXXX."""
    return "".join(
        c if c == " " or unicodedata.category(c) not in _INVISIBLE and not (c.isspace() and c != " ")
        else (f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
        for c in text
    )


def terminal_safe(text: str) -> str:
    """Script output for a terminal: every C0 and C1 control character but newline and tab
    written as \\uXXXX, so output cannot move the cursor, conceal text or restyle what the
    terminal shows next (a fake approval prompt over the real one)."""
    if text.isprintable():
        return text
    return "".join(c if c in "\n\t" or unicodedata.category(c) != "Cc" else f"\\u{ord(c):04x}" for c in text)


# The terminal approvals are asked on: a path, or the descriptor of the client's terminal that a
# server runner was passed (runtime/runner.py; it has no controlling terminal to open by path).
CONTROLLING_TTY: str | int = "/dev/tty"

# Written before a prompt: resets colours, character set and cursor whatever was printed before.
PROMPT_RESET = "\x1b[0m\x1b(B\x1b[?25h\r\n"


class TerminalApprover:
    """The command line's approver: `assume_yes` approves everything (--yes); otherwise it
    asks on the controlling terminal (y/N), and with no terminal it refuses at once (never
    hangs). The terminal is /dev/tty, not stdin, so a script piped into stdin cannot answer.
    `tty_in`/`tty_out` replace it with text streams (tests)."""

    MAX_ANSWER = 256

    def __init__(self, assume_yes: bool = False, tty_in=None, tty_out=None) -> None:
        self.assume_yes = assume_yes
        self.tty_in = tty_in
        self.tty_out = tty_out

    def _ask_tty(self, question: str) -> str | None:
        """Ask on /dev/tty and return the answer line, or None when there is no terminal."""
        try:
            if isinstance(CONTROLLING_TTY, int):
                fd = os.dup(CONTROLLING_TTY)
            else:
                fd = os.open(CONTROLLING_TTY, os.O_RDWR | getattr(os, "O_NOCTTY", 0) | safeio.O_CLOEXEC)
        except OSError:
            return None
        try:
            if not os.isatty(fd):
                return None
            data = (PROMPT_RESET + question).encode("utf-8", "replace")
            while data:
                data = data[os.write(fd, data):]
            answer = bytearray()
            while len(answer) < self.MAX_ANSWER:
                byte = os.read(fd, 1)
                if not byte or byte == b"\n":
                    break
                answer += byte
            return answer.decode("utf-8", "replace")
        finally:
            os.close(fd)

    def __call__(self, description: str) -> bool:
        if self.assume_yes:
            return True
        question = f"Approve: {printable(description)}? [y/N] "
        if self.tty_in is not None:
            if not (hasattr(self.tty_in, "isatty") and self.tty_in.isatty()):
                answer = None
            else:
                self.tty_out.write(question)
                self.tty_out.flush()
                answer = self.tty_in.readline()
        else:
            answer = self._ask_tty(question)
        if answer is None:
            raise ApprovalDeniedError(
                f"{printable(description)}: needs approval, but no terminal is attached to ask; "
                "run with --yes to pre-approve"
            )
        return answer.strip().lower() in ("y", "yes")
