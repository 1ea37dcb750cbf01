"""The `FUELTENSOR_*` environment variables, read by one parser: a switch takes the usual
spellings (1/0, true/false, on/off, yes/no, any case), a count a positive integer, and any other
value is refused with a `SettingError` naming the variable and what it takes.

`import fueltensor` raises that error; the `fueltensor` command (its script or
`python -m fueltensor`) prints it as one line and exits with status 2 instead (`refused`).
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import Final, NoReturn

from fueltensor.core.errors import SettingError

ON: Final = ("1", "true", "on", "yes")
OFF: Final = ("0", "false", "off", "no")
COMMAND: Final = "fueltensor"
USAGE: Final = 2
"""The exit status of the command for a setting it refuses (a usage error, as argparse's)."""


def _launched_as_command() -> bool:
    """Whether this process is the `fueltensor` command: its console script, or
    `python -m fueltensor` (the interpreter's own arguments name the module)."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if sys.argv and Path(sys.argv[0]).stem == COMMAND:
        return True
    return any(a == "-m" and b == COMMAND for a, b in itertools.pairwise(argv))


def refused(error: SettingError) -> NoReturn:
    """Raise `error`; in the `fueltensor` command, print it as one line and exit 2 instead (a
    setting is read while the package imports, before the command can catch anything)."""
    if _launched_as_command():
        print(f"{COMMAND}: {error}", file=sys.stderr)
        raise SystemExit(USAGE)
    raise error


def switch(name: str, default: bool) -> bool:
    """$`name` as a switch: `default` when unset or empty, else on or off by its spelling;
    SettingError (through `refused`) for any other value."""
    text = os.environ.get(name, "")
    word = text.strip().lower()
    if not word:
        return default
    if word in ON or word in OFF:
        return word in ON
    refused(
        SettingError(
            f"${name}={text!r} is not a switch: set {'/'.join(ON)} for on or "
            f"{'/'.join(OFF)} for off (any case), or leave it unset"
        )
    )


def count(name: str, most: int) -> int | None:
    """$`name` as a count from 1 to `most`: None when unset or empty; SettingError (through
    `refused`) for anything else."""
    text = os.environ.get(name, "")
    if not text.strip():
        return None
    word = text.strip().removeprefix("+")
    if word.isdecimal() and 1 <= int(word) <= most:
        return int(word)
    refused(
        SettingError(
            f"${name}={text!r} is not a count: set a whole number from 1 to {most}, or leave "
            "it unset"
        )
    )
