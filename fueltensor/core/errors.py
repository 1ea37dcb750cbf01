"""The exceptions fueltensor raises; each message says what was wrong and what is accepted."""

from __future__ import annotations


class ContractError(ValueError):
    """A contract document is malformed; the message names the file, the line and the field."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        what = f"{field}: " if field else ""
        super().__init__(f"{where}{what}{message}")


class NoKernelError(TypeError):
    """No kernel contract admits an operation under the active backend restriction."""


class ProviderUnavailable(ImportError):
    """A provider was named where it cannot run: its framework is not installed (the message
    says how to install it)."""


class ContractViolation(RuntimeError):
    """A kernel produced an output that breaks its contract's `return` clause."""


class KernelStatusError(RuntimeError):
    """A compiled kernel returned a nonzero status (its thunk's `Err`); it produced no output."""

    def __init__(self, message: str, *, status: int, symbol: str) -> None:
        self.status = status
        self.symbol = symbol
        super().__init__(message)


class LibraryError(OSError):
    """A compiled kernel library is missing, is not a loadable shared library, or lacks a
    symbol it was asked for."""


class SettingError(ValueError):
    """A `FUELTENSOR_*` environment variable holds a value it does not take; the message names
    the variable, the value and the spellings it takes (`core.settings`)."""


class ContractWarning(UserWarning):
    """A contract loads but cannot do what its author meant (e.g. an op_kind nothing dispatches)."""


def with_article(word: str) -> str:
    """`word` with "a" or "an" for messages: "an int64", "a uint8", "a float32"."""
    return f"{'an' if word[:1].lower() in 'aeio' else 'a'} {word}"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`count` and the noun in the number it takes: "1 audit", "2 audits", "0 audits"."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
