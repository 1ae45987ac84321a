"""The proxy's FastAPI app: OpenAI chat/completions/Responses and Anthropic Messages routes under
`/sessions/{id}/v1`, and a small session API.

Every failure is an error JSON in the route's API shape (`errors.error_response`): malformed JSON, wrong
types, unknown sessions or routes, oversize bodies and a missing or wrong key are 4xx; engine failures
are 5xx and recorded on the session.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from rollgym.proxy import anthropic, responses
from rollgym.proxy.access_log import AccessLog
from rollgym.proxy.error_responses import APIError, bad_request, error_response
from rollgym.proxy.schemas import ChatCompletionRequest, CompletionRequest, ModelCard, ModelList, SessionCreate
from rollgym.proxy.service import ProxyCore
from rollgym.proxy.streaming import chat_chunks, completion_chunks

MAX_DEPTH = 100  # JSON nesting a request may have (tool schemas nest, but not this deep)
OFFLOAD_BYTES = 256 * 1024  # bodies over this are parsed, and their prompts rendered, off the event loop


async def read_json(request: Request, limit: int) -> tuple[Any, int]:
    """The request body as JSON and its size, refusing bodies over `limit` bytes (by header, then while
    reading). A large body is parsed in a worker thread, so other sessions are not held up."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise APIError(413, f"the request body is {declared} bytes; the limit is {limit}", code="request_too_large")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise APIError(413, f"the request body exceeds the limit of {limit} bytes", code="request_too_large")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return None, size
    if size > OFFLOAD_BYTES:
        return await asyncio.to_thread(decode_json, raw), size
    return decode_json(raw), size


def decode_json(raw: bytes) -> Any:
    """Parse a body; every client mistake in it is a 400 that names the field, never a 500."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}", code="invalid_json") from None
    except RecursionError:
        raise bad_request(
            f"the request body is nested more than {MAX_DEPTH} levels deep", code="invalid_json"
        ) from None
    except ValueError as exc:  # e.g. an integer past Python's 4,300-digit conversion limit
        raise bad_request(f"the request body has a value JSON cannot be read as: {exc}", code="invalid_json") from None
    check_values(data)
    return data


def check_values(data: Any) -> None:
    """Walk the body (without recursion): nesting within MAX_DEPTH, and every string valid Unicode (a lone
    UTF-16 surrogate such as "\\ud800" parses in JSON but no tokenizer can encode it)."""
    stack: list[tuple[Any, tuple, int]] = [(data, (), 0)]
    while stack:
        value, path, depth = stack.pop()
        field = ".".join(str(p) for p in path) or None
        if depth > MAX_DEPTH:
            raise bad_request(f"{field}: nested more than {MAX_DEPTH} levels deep", field, code="invalid_json")
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                bad = value[exc.start : exc.end].encode("utf-16", "surrogatepass")[2:].hex()
                raise bad_request(
                    f"{field or 'body'}: holds an unpaired UTF-16 surrogate (\\u{bad[2:4]}{bad[0:2]} at "
                    f"character {exc.start}); send valid Unicode",
                    field,
                    code="invalid_unicode",
                ) from None
        elif isinstance(value, dict):
            for key, item in value.items():
                stack.append((key, path, depth + 1))
                stack.append((item, (*path, key), depth + 1))
        elif isinstance(value, list):
            stack.extend((item, (*path, k), depth + 1) for k, item in enumerate(value))


def parse_body(data: Any, model: type[BaseModel]) -> Any:
    """Validate a JSON body against a pydantic model; the first problem becomes a 400 naming the field."""
    if not isinstance(data, dict):
        raise bad_request("the request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        param = ".".join(str(p) for p in err["loc"]) or None
        raise bad_request(
            f"{param or 'body'}: {err['msg']}"
            + (f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else ""),
            param,
        ) from None


class BearerAuth:
    """Pure ASGI middleware: every route but /health needs the api key, as `Authorization: Bearer <key>` or
    Anthropic's `x-api-key: <key>` (constant-time check)."""

    def __init__(self, app, api_key: str) -> None:
        self.app, self.key = app, api_key.encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"] != "/health":
            headers = dict(scope["headers"])
            header = headers.get(b"authorization", b"")
            scheme, _, token = header.partition(b" ")
            bearer_ok = scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.key)
            x_key = headers.get(b"x-api-key")
            if not bearer_ok and not (x_key is not None and hmac.compare_digest(x_key.strip(), self.key)):
                why = "missing" if not header and x_key is None else "incorrect"
                exc = APIError(
                    401,
                    f"{why} API key: send `Authorization: Bearer <key>` (or `x-api-key: <key>`) with "
                    "the proxy's --api-key",
                    code="invalid_api_key",
                )
                await error_response(scope["path"], exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)


#: the routes a client can call, named by 404 answers
ROUTES = (
    "POST /sessions",
    "GET|DELETE /sessions/{id}",
    "GET /sessions/{id}/rollouts",
    "HEAD /sessions/{id}[/v1]",
    "POST /sessions/{id}/v1/chat/completions",
    "POST /sessions/{id}/v1/completions",
    "POST /sessions/{id}/v1/responses",
    "POST /sessions/{id}/v1/messages",
    "POST /sessions/{id}/v1/messages/count_tokens",
    "GET /sessions/{id}/v1/models",
    "GET /health",
)


def not_found_message(path: str) -> str:
    """What to say about a path no route serves: how to reach a session, and the routes that exist."""
    routes = "; ".join(ROUTES)
    if path == "/v1" or path.startswith("/v1/") or path in ("/chat/completions", "/responses", "/messages"):
        return (
            f"no route {path}: API routes live under a session, e.g. /sessions/default/v1{path.removeprefix('/v1')} "
            "(`rollgym proxy` creates the session 'default'), or create one with POST /sessions and use the "
            f"`base_url` it returns (Anthropic clients: the base URL without `/v1`). Routes: {routes}"
        )
    head, _, rest = path.removeprefix("/sessions/").partition("/")
    if path.startswith("/sessions/") and rest.split("/")[0] in (
        "chat",
        "completions",
        "responses",
        "messages",
        "models",
    ):
        return f"no route {path}: did you mean /sessions/{head}/v1/{rest} (the base URL ends in /v1)? Routes: {routes}"
    return f"no route {path}. Routes: {routes}"


def _json(model: BaseModel, headers: dict[str, str]) -> Response:
    return Response(model.model_dump_json(), media_type="application/json", headers=headers)


def create_app(core: ProxyCore) -> FastAPI:
    """The ASGI app serving `core` (sessions, chat/completions, completions, models)."""
    app = FastAPI(title="rollgym recording proxy", docs_url=None, redoc_url=None, openapi_url=None)
    settings = core.settings

    if settings.api_key:
        app.add_middleware(BearerAuth, api_key=settings.api_key)
    app.add_middleware(AccessLog)  # added last: the outermost, so refused requests are logged too

    @app.exception_handler(APIError)
    async def _proxy_error(request: Request, exc: APIError) -> JSONResponse:
        return error_response(request.url.path, exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        message = not_found_message(request.url.path) if exc.status_code == 404 else str(exc.detail)
        return error_response(request.url.path, APIError(exc.status_code, message, code=code))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(request.url.path, bad_request(f"invalid request: {exc.errors()[0].get('msg', exc)}"))

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        return error_response(
            request.url.path, APIError(500, f"internal proxy error: {type(exc).__name__}: {exc}", code="internal_error")
        )

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "sessions": len(core.store), "model": core.model_name}

    @app.post("/sessions", status_code=201)
    async def create_session(request: Request) -> dict:
        data, _ = await read_json(request, settings.max_body_bytes)
        body = parse_body(data if data is not None else {}, SessionCreate)
        # the configured host and bound port, not the request's Host header (which a client controls)
        sess = core.create_session(body.session_id, core.public_url or str(request.base_url).rstrip("/"), body.metadata)
        return {"session_id": sess.id, "base_url": sess.base_url}

    @app.get("/sessions/{session_id}")
    async def get_session(session_id: str) -> dict:
        return core.store.get(session_id).to_json()

    @app.head("/sessions/{session_id}")
    @app.head("/sessions/{session_id}/v1")
    async def session_head(session_id: str) -> Response:
        """200 for a live session: some clients probe their base URL with HEAD before the first request."""
        core.store.get(session_id)
        return Response(status_code=200)

    @app.get("/sessions/{session_id}/rollouts")
    async def get_rollouts(session_id: str) -> list[dict]:
        return [r.model_dump(mode="json") for r in core.store.get(session_id).rollouts()]

    @app.delete("/sessions/{session_id}")
    async def close_session(session_id: str) -> dict:
        sess = core.store.close(session_id)
        return {**sess.to_json(), "rollouts": [r.model_dump(mode="json") for r in sess.rollouts()]}

    @app.post("/sessions/{session_id}/v1/chat/completions")
    async def chat_completions(session_id: str, request: Request):
        sess = core.store.get(session_id)
        data, size = await read_json(request, settings.max_body_bytes)
        t0 = time.perf_counter()  # the proxy's own work from here (the engine's time is subtracted)
        req = parse_body(data, ChatCompletionRequest)
        resp, call = await core.chat(sess, req, offload=size > OFFLOAD_BYTES)
        overhead_ms = (time.perf_counter() - t0 - call.generate_s) * 1000
        headers = {
            "x-rollgym-call": str(call.index),
            "x-rollgym-segment": str(call.segment),
            "x-rollgym-overhead-ms": f"{overhead_ms:.3f}",
        }
        if req.stream:
            include = bool(req.stream_options and req.stream_options.include_usage)
            return StreamingResponse(chat_chunks(resp, include), media_type="text/event-stream", headers=headers)
        return _json(resp, headers)

    @app.post("/sessions/{session_id}/v1/completions")
    async def completions(session_id: str, request: Request):
        sess = core.store.get(session_id)
        data, size = await read_json(request, settings.max_body_bytes)
        req = parse_body(data, CompletionRequest)
        resp, call = await core.complete(sess, req, offload=size > OFFLOAD_BYTES)
        headers = {"x-rollgym-call": str(call.index), "x-rollgym-segment": str(call.segment)}
        if req.stream:
            include = bool(req.stream_options and req.stream_options.include_usage)
            return StreamingResponse(completion_chunks(resp, include), media_type="text/event-stream", headers=headers)
        return _json(resp, headers)

    @app.post("/sessions/{session_id}/v1/messages")
    @app.post("/sessions/{session_id}/v1/v1/messages")  # the session's OpenAI base URL given to an Anthropic client
    async def messages(session_id: str, request: Request):
        sess = core.store.get(session_id)
        data, size = await read_json(request, settings.max_body_bytes)
        body = parse_body(data, anthropic.MessagesRequest)
        req, notes = anthropic.to_chat(body, core.tokenizer, settings.default_max_tokens)
        resp, call = await core.chat(sess, req, offload=size > OFFLOAD_BYTES, notes=notes)
        message = anthropic.to_message(resp, call, body, core.tokenizer)
        headers = {
            "x-rollgym-call": str(call.index),
            "x-rollgym-segment": str(call.segment),
            "request-id": f"req_{call.index}",
        }
        if body.stream:
            return StreamingResponse(anthropic.message_events(message), media_type="text/event-stream", headers=headers)
        return JSONResponse(message, headers=headers)

    @app.post("/sessions/{session_id}/v1/messages/count_tokens")
    @app.post("/sessions/{session_id}/v1/v1/messages/count_tokens")
    async def count_tokens(session_id: str, request: Request) -> dict:
        core.store.get(session_id)
        data, _ = await read_json(request, settings.max_body_bytes)
        body = parse_body(data, anthropic.MessagesBody)
        req, _notes = anthropic.to_chat(body, core.tokenizer, settings.default_max_tokens)
        return {"input_tokens": core.prompt_len(req)}

    @app.post("/sessions/{session_id}/v1/responses")
    async def create_response(session_id: str, request: Request):
        sess = core.store.get(session_id)
        data, size = await read_json(request, settings.max_body_bytes)
        body = parse_body(data, responses.ResponsesRequest)
        req, conversation, notes = responses.to_chat(body, sess)
        resp, call = await core.chat(sess, req, offload=size > OFFLOAD_BYTES, notes=notes)
        response = responses.to_response(resp, call, body)
        if body.store is not False:
            sess.remember_response(response["id"], conversation + [call.reply])
        headers = {"x-rollgym-call": str(call.index), "x-rollgym-segment": str(call.segment)}
        if body.stream:
            return StreamingResponse(
                responses.response_events(response), media_type="text/event-stream", headers=headers
            )
        return JSONResponse(response, headers=headers)

    @app.get("/sessions/{session_id}/v1/models")
    async def models(session_id: str) -> dict:
        core.store.get(session_id)
        return ModelList(data=[ModelCard(id=core.model_name, created=0)]).model_dump()

    @app.get("/sessions/{session_id}/v1/models/{model_id:path}")
    async def model(session_id: str, model_id: str) -> dict:
        core.store.get(session_id)
        return ModelCard(id=model_id, created=0).model_dump()

    return app
