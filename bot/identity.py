"""Who is asking: one value passed from the Slack handlers, the HTTP API and the CLI down to the commands."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Identity"]


@dataclass(frozen=True)
class Identity:
    """The Slack user (or the HTTP API caller) and whether they are an admin.

    Passed to the orchestrator as ``identity``; the live tools hand it back to
    :meth:`bot.context.BotContext.run_command`, so the model acts with the asker's rights.

    Attributes:
        user_id: Slack user id (``None`` for the HTTP API and the CLI).
        is_admin: whether admin-only commands may run.
        channel_id, team_id: where the request came from (Slack only).
        source: ``"slack"``, ``"api"`` or ``"cli"``.
    """

    user_id: str | None
    is_admin: bool = False
    channel_id: str | None = None
    team_id: str | None = None
    source: str = "slack"

    def to_json(self) -> dict:
        """``{"user_id", "is_admin", "source"}``."""
        return {"user_id": self.user_id, "is_admin": self.is_admin, "source": self.source}
