"""Every model family against its own reference: the conformance matrix, which docs/tokenization.md shows."""

from __future__ import annotations

import re
from pathlib import Path

from rollgym.rollouts.core.vocabularies import family_tokenizer
from rollgym.tokenization import conformance
from rollgym.tokenization.families import FAMILIES, family

DOC = Path(__file__).parents[2] / "docs" / "tokenization.md"
_BLOCK = re.compile(r"<!-- conformance matrix: start -->\n(.*?)<!-- conformance matrix: end -->", re.DOTALL)


def test_conformance_matrix_has_no_failure_and_is_the_one_in_the_docs():
    rows = [conformance.row(family_tokenizer(fam), fam) for fam in FAMILIES]
    failures = [(r.family, c.scenario, c.detail) for r in rows for c in r.cells if c.status == "fail"]
    assert failures == []
    cells = {(r.family, c.scenario): c for r in rows for c in r.cells}
    # What each family's reference is known to do, checked so the matrix cannot drift silently:
    assert cells[("gpt-oss", "parallel_calls")].status == "unsupported"  # GPT-OSS stops at <|call|>
    assert cells[("gpt-oss", "reasoning_on")].status == "exact (rewrites)"  # analysis dropped once a final exists
    assert cells[("mistral-v3", "one_call")].status == "exact (rewrites)"  # tools and system move to the last user
    assert cells[("mistral-v13", "one_call")].status == "exact"  # v13 only appends
    assert cells[("qwen3-coder", "turns_32")].status == "exact"
    assert cells[("command-a", "tool_error")].status == "exact"  # results numbered by their call's position
    assert all(cells[(f.name, "edge_values")].status != "unsupported" for f in FAMILIES)
    found = _BLOCK.search(DOC.read_text())
    assert found, f"{DOC} lost its conformance matrix markers"
    assert found.group(1) == conformance.markdown(rows), (
        "docs/tokenization.md's matrix is stale: paste the output of `rollgym check-template --all --markdown`"
    )


def test_unknown_family_lists_the_known_ones():
    import pytest

    from rollgym.tokenization import InvalidInputError

    with pytest.raises(InvalidInputError, match="known: gpt-oss, mistral-v3"):
        family("gpt-5")


def test_every_template_file_is_a_family_or_a_fixture_and_has_its_source_noted():
    from rollgym.tokenization.families import template_text

    sources = (Path(__file__).parents[2] / "tokenization" / "families" / "SOURCES.md").read_text()
    templates = sorted(p.name for p in (Path(__file__).parents[2] / "tokenization" / "families" / "templates").iterdir())
    for name in templates:
        assert f"`{name}`" in sources, f"{name} has no source in SOURCES.md"
        assert template_text(name)
    assert {f.template for f in FAMILIES if f.template} <= set(templates)
