"""The documents tests' shop: `shop/` copied to a fresh folder, with a PDF made for the test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .pdf import make_pdf

SHOP = Path(__file__).resolve().parent / "shop"
WARRANTY = [
    [
        "Warranty",
        "Every blender carries a two year warranty against defects.",
        "The warranty does not cover damage from dropping the blender.",
    ],
    ["Spare parts", "Spare jugs and blades can be ordered for ten years after purchase."],
]


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A copy of the shop, with `policies/warranty.pdf`; returns its agent.yaml."""
    folder = tmp_path / "shop"
    shutil.copytree(SHOP, folder, ignore=shutil.ignore_patterns(".stalwart", "__pycache__"))
    (folder / "policies" / "warranty.pdf").write_bytes(make_pdf(WARRANTY))
    return folder / "agent.yaml"
