"""The `FUELTENSOR_*` environment variables (issue 44 item 5): a switch takes the usual spellings
in any case, a value no variable takes is refused naming the variable, by `import fueltensor` as
an exception and by the command as one line with exit status 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _cli import PACKAGE_DIR, command
from _extras import OUTSIDE

from fueltensor.kernels._chassis import IMPLEMENTATION, IMPLEMENTATIONS

BAD = {
    "FUELTENSOR_NUM_THREADS": "abc",
    "FUELTENSOR_PURE_NUMPY": "maybe",
    "FUELTENSOR_POW_SHORTCUT": "sometimes",
}


def implementation(value: str) -> str:
    """The kernels' implementation a fresh process chooses under FUELTENSOR_PURE_NUMPY=`value`."""
    done = command_python(
        "from fueltensor.kernels._chassis import IMPLEMENTATION; print(IMPLEMENTATION)",
        {"FUELTENSOR_PURE_NUMPY": value},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def command_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -c CODE` importing the fueltensor under test, under `env` alone."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PACKAGE_DIR), **env},
        cwd=OUTSIDE,
        check=False,
    )


@pytest.mark.parametrize("script", [False, True], ids=["python -m", "script"])
@pytest.mark.parametrize("name", BAD)
def test_the_command_refuses_a_bad_setting_in_one_line(name: str, script: bool) -> None:
    done = command("--version", env={name: BAD[name]}, script=script)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stdout == ""
    assert done.stderr.startswith(f"fueltensor: ${name}={BAD[name]!r} is not a")


@pytest.mark.parametrize("name", BAD)
def test_import_raises_a_setting_error_naming_the_variable(name: str) -> None:
    code = (
        "try:\n    import fueltensor\nexcept ValueError as e:\n"
        "    print(type(e).__name__, e)\nelse:\n    print('imported')"
    )
    done = command_python(code, {name: BAD[name]})
    assert done.stdout.startswith(f"SettingError ${name}={BAD[name]!r}"), done.stdout + done.stderr
    if name != "FUELTENSOR_NUM_THREADS":
        assert "1/true/on/yes" in done.stdout and "0/false/off/no" in done.stdout


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "on", "Yes", " yes "])
def test_pure_numpy_takes_every_spelling_of_on(value: str) -> None:
    assert implementation(value) == "pure"


@pytest.mark.parametrize("value", ["0", "false", "Off", "NO", ""])
def test_pure_numpy_takes_every_spelling_of_off(value: str) -> None:
    assert implementation(value) == next(iter(IMPLEMENTATIONS))


@pytest.mark.skipif(IMPLEMENTATION != "native", reason="the vector powf runs compiled")
@pytest.mark.parametrize(
    ("value", "on"), [("off", False), ("False", False), ("no", False), ("on", True)]
)
def test_pow_shortcut_takes_the_spellings_of_a_switch(value: str, on: bool) -> None:
    done = command("pow-shortcut", env={"FUELTENSOR_POW_SHORTCUT": value})
    assert done.returncode == 0, done.stderr
    said = done.stdout.split(":")[1].strip()
    if on:
        assert "switched off" not in done.stdout
    else:
        assert said == "off" and f"switched off (FUELTENSOR_POW_SHORTCUT={value})" in done.stdout
