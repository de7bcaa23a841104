"""Where a source links to: its own repository's web URL at its commit, or a document's own link.

    links = SourceLinks(ctx, repo="all")
    links(source)    # ("https://github.com/acme/api/blob/<sha>/src/a.js#L3-L9", "api/src/a.js:L3-L9")

Handed to the renderer as ``web_url`` (:func:`bot.slack.render.source_link` accepts a callable),
so in an ``in:all`` answer each source is labelled with its repository (the qualified path
the model cited) and linked to that repository's ``web_url``; a document (``doc:<id>``) is
labelled with its title and linked to the ``url`` of its metadata (a saved Slack thread's
permalink), or shown unlinked; an issue or pull request (``issue:<n>``, ``pr:<n>``) is labelled
``#12 title (open)`` (its state: open, closed, merged) and linked to its page on GitHub.
"""
from __future__ import annotations

from urllib.parse import quote

from rag.federation import DOC_PREFIX
from rag.sources.items import split_item_path

__all__ = ["SourceLinks"]


class SourceLinks:
    """``(source) -> (url or None, label)`` for one answer.

    Args:
        ctx: the :class:`bot.context.BotContext` (``web_url_of``, ``commit_of``, ``repos``).
        repo: the answer's repository (``"all"``, or a name); sources without ``repo`` belong to it.
    """

    def __init__(self, ctx, *, repo: str | None) -> None:
        self.ctx = ctx
        self.repo = repo

    def __call__(self, source) -> tuple[str | None, str]:
        path = str(source.path)
        if path.startswith(DOC_PREFIX):
            return self._document(source)
        inside = getattr(source, "repo_path", None) or path
        if split_item_path(inside) is not None:
            return self._item(source, inside)
        label = f"{path}:L{source.start}-L{source.end}"
        name = getattr(source, "repo", None) or self.repo
        web_url = self.ctx.web_url_of(name)
        if not web_url:
            return None, label
        inside = getattr(source, "repo_path", None) or path
        commit = self.ctx.commit_of(name)
        return f"{web_url.rstrip('/')}/blob/{commit or 'HEAD'}/{quote(inside)}#L{source.start}-L{source.end}", label

    def _item(self, source, path: str) -> tuple[str | None, str]:
        number = path.split(":", 1)[1]
        title = (getattr(source, "heading", None) or "").removeprefix(f"#{number} ").strip()
        item = None
        repos = getattr(self.ctx, "repos", None)
        name = getattr(source, "repo", None) or self.repo
        repo = repos.find(name) if repos is not None and name else None
        if repo is None and repos is not None:
            repo = repos.default
        if repo is not None and repo.engine is not None:
            from rag.sources.items import ItemStore

            try:
                item = ItemStore(repo.engine.index).get(path)
            except Exception:  # noqa: BLE001 - a link is an extra
                item = None
        prefix = f"{source.repo}/" if getattr(source, "repo_path", None) and getattr(source, "repo", None) else ""
        label = f"{prefix}#{number} {item.title if item else title}".rstrip()
        if item is not None:
            label += f" ({item.state})"
        url = item.url if item is not None and item.url.startswith(("https://", "http://")) else None
        return url, label

    def _document(self, source) -> tuple[str | None, str]:
        title = getattr(source, "heading", None)
        label = f"{title} ({source.path})" if title else str(source.path)
        url = None
        repos = getattr(self.ctx, "repos", None)
        if repos is not None:
            from rag.documents import DocumentStore

            doc_id = str(source.path)[len(DOC_PREFIX):]
            for repo in repos.serving():
                try:
                    found = DocumentStore(repo.engine.index).get(doc_id)
                except Exception:  # noqa: BLE001 - a link is an extra
                    found = None
                if found is not None:
                    link = found.metadata.get("url")
                    url = link if isinstance(link, str) and link.startswith(("https://", "http://")) else None
                    break
        return url, label
