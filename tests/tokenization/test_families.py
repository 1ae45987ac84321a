"""Every model family against its own reference: the conformance matrix, which docs/tokenization.md shows."""

from __future__ import annotations

import re
from pathlib import Path

from rollgym.tokenization import conformance
from rollgym.tokenization.families import FAMILIES, family

DOC = Path(__file__).parents[2] / "docs" / "tokenization.md"
_BLOCK = re.compile(r"<!-- conformance matrix: start -->\n(.*?)<!-- conformance matrix: end -->", re.DOTALL)


def test_conformance_matrix_has_no_failure_and_is_the_one_in_the_docs():
    """`rollgym check-template --all --markdown` computes the matrix; it has no failure and is what the docs show."""
    from typer.testing import CliRunner

    from rollgym.cli import app

    result = CliRunner().invoke(app, ["check-template", "--all", "--markdown"])
    assert result.exit_code == 0, result.output  # 1 would mean a failing cell
    table = result.output
    found = _BLOCK.search(DOC.read_text())
    assert found, f"{DOC} lost its conformance matrix markers"
    assert found.group(1) == table, (
        "docs/tokenization.md's matrix is stale: paste the output of `rollgym check-template --all --markdown`"
    )
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ")[3:]
        for line in table.splitlines()
        if line.startswith("| ") and "---" not in line
    }
    column = {name: k for k, name in enumerate(conformance.SCENARIOS)}
    assert set(rows) == {"family", *(f.name for f in FAMILIES)}

    def cell(family_name: str, scenario: str) -> str:
        return rows[family_name][column[scenario]].strip(" |").split(" [")[0]

    # What each family's reference is known to do, checked so the matrix cannot drift silently:
    assert cell("gpt-oss", "parallel_calls") == "unsupported"  # GPT-OSS stops at <|call|>
    assert cell("gpt-oss", "reasoning_on") == "exact, rewrites"  # analysis dropped once a final exists
    assert cell("mistral-v3", "one_call") == "exact, rewrites"  # tools and system move to the newest user turn
    assert cell("mistral-v13", "one_call") == "exact"  # v13 only appends
    assert cell("qwen3-coder", "turns_32") == "exact"
    assert cell("command-a", "tool_error") == "exact"  # results numbered by their call's position
    assert all(cell(f.name, "edge_values").startswith("exact") for f in FAMILIES)


def test_unknown_family_lists_the_known_ones():
    import pytest

    from rollgym.tokenization import InvalidInputError

    with pytest.raises(InvalidInputError, match="known: gpt-oss, mistral-v3"):
        family("gpt-5")


def test_every_template_file_is_a_family_or_a_fixture_and_has_its_source_noted():
    from rollgym.tokenization.families import template_text

    sources = (Path(__file__).parents[2] / "tokenization" / "families" / "SOURCES.md").read_text()
    templates = sorted(
        p.name for p in (Path(__file__).parents[2] / "tokenization" / "families" / "templates").iterdir()
    )
    for name in templates:
        assert f"`{name}`" in sources, f"{name} has no source in SOURCES.md"
        assert template_text(name)
    assert {f.template for f in FAMILIES if f.template} <= set(templates)
