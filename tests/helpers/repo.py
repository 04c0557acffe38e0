"""The repository's root (where Makefile, app.py and headforms/ are), for tests that run its
commands or read its files: one place, whichever folder a test file sits in."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
