"""What the help and the docs say `compare` runs (issue 44 item 5): every provider in default
dispatch, the framework providers (`dispatch: when_named`, read from the registry) only when
named, where they used to say every admissible provider runs."""

from __future__ import annotations

import re

from _cli import CHECKOUT, command

import fueltensor as ft


def when_named() -> list[str]:
    """The providers of the registry that join dispatch only where named."""
    return sorted({c.provider.name for c in ft.registry() if c.provider.when_named})


def test_compare_help_says_the_when_named_providers_join_only_when_named() -> None:
    assert when_named()  # the framework documents ship with fueltensor, dispatch: when_named
    text = " ".join(command("compare", "--help").stdout.split())
    assert "`dispatch: when_named` (the frameworks) join only when named" in text
    listing = " ".join(command("--help").stdout.split())
    assert "every admissible provider" not in listing


def test_the_docs_name_every_provider_that_joins_only_when_named() -> None:
    cli = " ".join((CHECKOUT / "docs" / "cli.md").read_text().split())
    listed = re.search(r"the framework providers ([^;]+) join only when named", cli)
    assert listed is not None, cli
    for name in when_named():
        assert name in listed[1], name


def test_the_docs_say_compare_backends_leaves_out_the_frameworks_unless_named() -> None:
    for page in ("README.md", "docs/testing.md"):
        text = (CHECKOUT / page).read_text()
        (line,) = re.findall(r"with ft\.compare_backends\(\) as report: +#.*", text)
        assert "frameworks" in line and "named" in line, (page, line)
    cli = " ".join((CHECKOUT / "docs" / "cli.md").read_text().split())
    assert "join only when named" in cli


def test_testing_md_names_the_comparison_tables_columns_and_no_others() -> None:
    from fueltensor.tools.comparisons import COLUMNS

    text = (CHECKOUT / "docs" / "testing.md").read_text()
    start = text.index("The table has one row per (operation, other kernel)")
    paragraph = text[start : text.index("\n\n", start)]
    described = paragraph[: paragraph.index("An operation no other")]
    named = re.findall(r"`([^`]+)`", described)
    assert set(named) == set(COLUMNS), named
