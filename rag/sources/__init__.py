"""Sources beside a repository's files: its GitHub issues and pull requests.

``items`` stores them in the index (chunks ``issue:<n>`` / ``pr:<n>``); ``github`` fetches them
(githubkit, imported only there) as a step of the repository's index update.
"""
from __future__ import annotations

from rag.sources.items import ITEM_KINDS, Item, ItemStore, is_item_path, item_path, split_item_path

__all__ = ["ITEM_KINDS", "Item", "ItemStore", "is_item_path", "item_path", "split_item_path"]
