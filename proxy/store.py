"""`ProxySettings` and `SessionStore`: the proxy's sessions by id, with idle expiry and a size cap."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Literal

from pydantic import Field

from rollgym.limits import DEFAULT_MAX_TOKENS_PER_TURN
from rollgym.models import BoundaryModel
from rollgym.proxy.error_responses import APIError
from rollgym.proxy.session import ProxySession, new_session_id
from rollgym.tokenization import ChatTokenizer


class ProxySettings(BoundaryModel):
    """Limits and defaults of one proxy."""

    api_key: str | None = Field(default=None, description="required as `Authorization: Bearer KEY` when set")
    max_body_bytes: int = Field(default=8 * 2**20, ge=1024, description="larger request bodies get a 413")
    idle_timeout_s: float = Field(default=3600.0, gt=0, description="sessions unused this long are dropped")
    max_sessions: int = Field(default=10_000, ge=1, description="live sessions at most (creating more is a 429)")
    default_max_tokens: int = Field(
        default=DEFAULT_MAX_TOKENS_PER_TURN, ge=1, description="max_tokens when the request gives none"
    )
    keep_states: int = Field(default=8, ge=1, description="calls per session that keep their token state for matching")
    model_name: str = Field(default="", description="the id /models reports (default: the engine's model)")
    truncation: Literal["end", "close"] = Field(
        default="close",
        description="a reply cut at max_tokens: 'close' lets the agent's next call continue the segment (the "
        "turn's end token is added as a masked bridge id); 'end' starts a new segment",
    )
    temperature: float | None = Field(
        default=None,
        ge=0.0,
        description="sample every call at this temperature, whatever the "
        "agent sends (the trainer decides how to sample)",
    )
    seed: int | None = Field(
        default=None,
        description="calls that send no seed are sampled with one derived from this, the "
        "session id and the call's index: a rerun samples the same ids",
    )


class SessionStore:
    """Thread-safe sessions by id; expired ids are remembered (bounded) so a late request gets a clear 404."""

    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        self._sessions: dict[str, ProxySession] = {}
        self._expired: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self._last_sweep = 0.0

    def create(
        self, tokenizer: ChatTokenizer, *, session_id: str | None = None, base_url: str = "", **kwargs
    ) -> ProxySession:
        self.sweep()
        with self._lock:
            sid = session_id or new_session_id()
            if sid in self._sessions:
                raise APIError(409, f"session {sid!r} already exists", param="session_id", code="session_exists")
            if len(self._sessions) >= self.settings.max_sessions:
                raise APIError(
                    429,
                    f"too many live sessions ({self.settings.max_sessions}); close some first",
                    code="too_many_sessions",
                )
            sess = ProxySession(
                sid,
                tokenizer,
                base_url=f"{base_url}/sessions/{sid}/v1" if base_url else "",
                api_key=self.settings.api_key,
                keep_states=self.settings.keep_states,
                **kwargs,
            )
            self._sessions[sid] = sess
            self._expired.pop(sid, None)
            return sess

    def get(self, session_id: str) -> ProxySession:
        self.sweep()
        with self._lock:
            sess = self._sessions.get(session_id)
            if sess is None:
                why = self._expired.get(session_id)
                detail = f" ({why})" if why else "; create one with POST /sessions"
                raise APIError(404, f"no session {session_id!r}{detail}", param="session_id", code="session_not_found")
            sess.last_used = time.monotonic()
            return sess

    def close(self, session_id: str) -> ProxySession:
        sess = self.get(session_id)
        with self._lock:
            self._sessions.pop(session_id, None)
            self._forget(session_id, "closed")
        sess.closed = True
        return sess

    def sweep(self) -> None:
        """Drop sessions idle longer than `idle_timeout_s` (at most once a second)."""
        now = time.monotonic()
        if now - self._last_sweep < 1.0:
            return
        self._last_sweep = now
        with self._lock:
            for sid, sess in list(self._sessions.items()):
                if now - sess.last_used > self.settings.idle_timeout_s:
                    del self._sessions[sid]
                    sess.closed = True
                    self._forget(sid, f"expired after {self.settings.idle_timeout_s:g}s idle")

    def _forget(self, sid: str, why: str) -> None:
        self._expired[sid] = why
        while len(self._expired) > 10_000:
            self._expired.popitem(last=False)

    def __len__(self) -> int:
        return len(self._sessions)
