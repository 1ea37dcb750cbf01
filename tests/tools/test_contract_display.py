"""What a person sees of a contract: a one-line repr, a card of facts (text and HTML), and the
contracts of one op kind as a table."""

from __future__ import annotations

from html import escape

import fueltensor as ft


def test_contract_repr_is_one_readable_line() -> None:
    c = ft.registry()["add_f32"]
    text = repr(c)
    assert "\n" not in text and len(text) < 200
    for fact in (c.name, c.op_kind, c.provider.name, str(c.cost.bytes_moved)):
        assert fact in text
    assert "mappingproxy" not in text and "Formula(" not in text


def test_contract_card_lists_the_facts_read_from_the_document() -> None:
    for c in ft.registry():
        card, html = str(c), c._repr_html_()
        facts = (
            c.name,
            c.op_kind,
            c.provider.name,
            c.caps.awkward_layout_strategy,
            str(c.cost.bytes_moved),
            c.determinism,
            c.precision.notes,
            *(d for s in c.inputs for d in s.dtypes),
        )
        for fact in facts:
            assert fact in card
            assert escape(fact) in html  # quotes too: a note may hold one
        assert "frozenset" not in card and "<table" in html


def test_for_op_shows_a_table_of_its_contracts() -> None:
    reg = ft.registry()
    found = reg.for_op("DivElementwise")
    assert isinstance(found, tuple) and found == tuple(
        c for c in reg if c.registrable and c.op_kind == "DivElementwise"
    )
    text, html = repr(found), found._repr_html_()
    assert text.splitlines()[0].split()[:2] == ["kernel", "provider"]
    for c in found:
        assert c.name in text and c.name in html
    assert repr(reg.for_op("NoSuchKind")) == "Contracts()"
