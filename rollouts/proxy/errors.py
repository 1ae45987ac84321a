"""OpenAI-style error responses: `{"error": {"message", "type", "param", "code"}}` with a 4xx/5xx status.

The shape is the one OpenAI's API returns and its Python client parses into `openai.APIStatusError`
(openai-python `_exceptions.py`: `BadRequestError` 400, `AuthenticationError` 401, `NotFoundError` 404, ...).
"""

from __future__ import annotations

from fastapi.responses import JSONResponse

from rollgym.errors import ProxyError


class APIError(ProxyError):
    """A request the proxy answers with an error JSON body instead of a completion (a `ProxyError`)."""

    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None,
                 type_: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param
        self.type = type_ or ("invalid_request_error" if status < 500 else "server_error")

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if self.status == 401 else None
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def unsupported(param: str, why: str) -> APIError:
    """A request field the proxy cannot honour without breaking token exactness (or at all)."""
    return APIError(400, f"`{param}` is not supported by rollgym's recording proxy: {why}", param=param,
                      code="unsupported_parameter")
