"""``spark`` on Spark2.5.jinja's renders."""

from __future__ import annotations

import pytest

from .checks import check_prefixes, check_rendered, check_truncated
from .xml_rendered import FORMAT_OF, cases_for


@pytest.mark.parametrize("key", cases_for("spark"), ids="-".join)
def test_spark_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("spark"), ids="-".join)
def test_spark_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


@pytest.mark.parametrize("template", sorted(t for t, f in FORMAT_OF.items() if f == "spark"))
def test_spark_truncated(template: str) -> None:
    check_truncated(template)
