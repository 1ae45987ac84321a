"""Error responses: OpenAI's `{"error": {"message", "type", "param", "code"}}` with a 4xx/5xx status, or
Anthropic's `{"type": "error", "error": {"type", "message"}}` on the Anthropic routes (`error_response`).

The OpenAI shape is the one its Python client parses into `openai.APIStatusError` (openai-python
`_exceptions.py`: `BadRequestError` 400, `AuthenticationError` 401, `NotFoundError` 404, ...); the Anthropic
shape is the one the Anthropic API returns (docs "Errors": invalid_request_error, authentication_error, ...).
"""

from __future__ import annotations

from fastapi.responses import JSONResponse

from rollgym.errors import ProxyError


class APIError(ProxyError):
    """A request the proxy answers with an error JSON body instead of a completion (a `ProxyError`)."""

    def __init__(
        self, status: int, message: str, *, code: str | None = None, param: str | None = None, type_: str | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param
        self.type = type_ or ("invalid_request_error" if status < 500 else "server_error")

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def anthropic_body(self) -> dict:
        kind = ANTHROPIC_TYPES.get(self.status, "invalid_request_error" if self.status < 500 else "api_error")
        return {"type": "error", "error": {"type": kind, "message": self.message}}

    def response(self, dialect: str = "openai") -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if self.status == 401 else None
        body = self.anthropic_body() if dialect == "anthropic" else self.body()
        return JSONResponse(body, status_code=self.status, headers=headers)


#: Anthropic's error type per HTTP status (other 4xx: invalid_request_error, other 5xx: api_error)
ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def dialect_of(path: str) -> str:
    """Which API's error shape a request path gets: "anthropic" under `/v1/messages`, else "openai"."""
    return "anthropic" if "/v1/messages" in path else "openai"


def error_response(path: str, exc: APIError) -> JSONResponse:
    """The one place an `APIError` becomes an HTTP response, in the shape of the API the path belongs to."""
    return exc.response(dialect_of(path))


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def unsupported(param: str, why: str) -> APIError:
    """A request field the proxy cannot honour without breaking token exactness (or at all)."""
    return APIError(
        400,
        f"`{param}` is not supported by rollgym's recording proxy: {why}",
        param=param,
        code="unsupported_parameter",
    )
