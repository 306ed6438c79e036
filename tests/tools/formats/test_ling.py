"""``ling`` on inclusionai-ling-3.0-flash.jinja's renders."""

from __future__ import annotations

import pytest

from .checks import check_prefixes, check_rendered, check_truncated
from .xml_rendered import FORMAT_OF, cases_for


@pytest.mark.parametrize("key", cases_for("ling"), ids="-".join)
def test_ling_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("ling"), ids="-".join)
def test_ling_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


@pytest.mark.parametrize("template", sorted(t for t, f in FORMAT_OF.items() if f == "ling"))
def test_ling_truncated(template: str) -> None:
    check_truncated(template)
