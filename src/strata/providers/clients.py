"""What the model-backed providers share: the ``openai`` client for any OpenAI-compatible
endpoint, its API key (a setting, or a Secrets Manager secret read through Powertools' cache),
one translation of that client's failures, and one of ``bedrock-runtime``'s, into
``ModelCallFailed`` with a reason code, and the answer schema in the strict subset.

Retries are the clients' own: the ``openai`` client's (exponential backoff with jitter on
connection errors, timeouts, 408/409/429/5xx, honouring ``Retry-After``), botocore's standard
mode for Bedrock; ``max_retries`` and the timeout set them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from openai import OpenAI
    from pydantic import BaseModel

# Keywords strict structured output refuses: Azure and some OpenAI-compatible servers refuse
# the whole request over them. Validation on our side still enforces every constraint.
_STRICT_UNSUPPORTED = ("default", "minLength", "maxLength")

# Sent when no key is configured (a local server without auth). Passing ``None`` would make
# the client read OPENAI_API_KEY and send that key to whatever base URL is configured.
NO_KEY = "strata-no-key"


class ModelCallFailed(Exception):
    """A model-backed step gave no usable answer. ``reason`` is a short code for receipts:
    timeout, connection, rate_limited, http_error, credentials, not_found (no such model),
    client, refused, truncated, filtered, empty, malformed, invalid (and for embedders:
    dimension)."""

    def __init__(self, message: str, *, reason: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.status_code = status_code


class KeyUnavailable(Exception):
    """The API key secret could not be read (raised inside the client, before sending)."""


def openai_client(
    *, base_url: str | None, api_key: str | None, api_key_secret_arn: str | None,
    timeout_s: float, max_retries: int,
) -> OpenAI:
    """An ``openai.OpenAI`` client for one endpoint.

    The key is ``api_key`` when set, else read from Secrets Manager (the secret's plain
    string) on each request through Powertools' 5-minute cache, so a rotated key is picked up
    by warm containers without a restart.
    """
    import openai

    key: Any
    if api_key:
        key = api_key
    elif api_key_secret_arn:
        key = secret_key_reader(api_key_secret_arn)
    else:
        key = NO_KEY
    return openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout_s, max_retries=max_retries)


def secret_key_reader(arn: str) -> Callable[[], str]:
    def read() -> str:
        from aws_lambda_powertools.utilities import parameters

        from strata.foundation import aws

        aws.trace_aws_calls()
        try:
            value = parameters.get_secret(arn, max_age=300)
        except Exception as exc:  # GetParameterError, botocore errors: all mean "no key"
            raise KeyUnavailable("could not read the model API key secret") from exc
        if isinstance(value, bytes):
            value = value.decode()
        if not isinstance(value, str) or not value.strip():
            raise KeyUnavailable("the model API key secret is empty")
        return value.strip()

    return read


Fail = Callable[..., ModelCallFailed]  # (detail, reason, status_code=None) -> exception


@contextlib.contextmanager
def openai_failures(fail: Fail, *, timeout_s: float, max_retries: int, what: str) -> Iterator[None]:
    """Turn whatever the ``openai`` client raises inside the block into ``fail(...)``.

    ``what`` names the expected answer ("a chat completion", "an embeddings list"). Messages
    never carry the error body: some servers echo the request in it. The call spends none of
    a request's database budget, even made with a connection held (strata.db.deadline): it
    has its own timeout.
    """
    from strata.db import deadline

    with deadline.excused():  # the client's first import, too, can take a second
        import openai

        try:
            yield
        except openai.APITimeoutError as exc:
            raise fail(f"no answer within {timeout_s:g} s (retries: {max_retries})",
                       "timeout") from exc
        except openai.APIConnectionError as exc:
            raise fail(f"endpoint unreachable (retries: {max_retries})", "connection") from exc
        except openai.APIStatusError as exc:
            reason = "rate_limited" if exc.status_code == 429 else "http_error"
            raise fail(
                f"endpoint answered HTTP {exc.status_code} (retries: {max_retries})",
                reason, exc.status_code,
            ) from exc
        except openai.APIResponseValidationError as exc:
            raise fail(f"response is not {what}", "malformed") from exc
        except KeyUnavailable as exc:
            raise fail(str(exc), "credentials") from exc
        except openai.OpenAIError as exc:
            raise fail(f"client error ({type(exc).__name__})", "client") from exc
        except ValueError as exc:
            # A 200 whose body is declared JSON but is not: the client lets the decoder's error
            # through unwrapped (and the embeddings parser raises ValueError on an empty list).
            raise fail(f"response is not {what}", "malformed") from exc


_THROTTLED = {"ThrottlingException", "TooManyRequestsException", "ServiceQuotaExceededException"}
_NO_CREDENTIALS = {"UnrecognizedClientException", "ExpiredTokenException",
                   "InvalidSignatureException"}


def bedrock_client(region: str | None, *, max_retries: int, timeout_s: float,
                   max_pool_connections: int = 10) -> Any:
    """A ``bedrock-runtime`` client: botocore's standard retry mode (throttling and 5xx,
    backoff with jitter) for ``max_retries`` retries, each attempt's read bounded."""
    from botocore.config import Config

    from strata.foundation import aws

    return aws.client("bedrock-runtime", region_name=region, config=Config(
        retries={"mode": "standard", "max_attempts": max_retries + 1},
        read_timeout=timeout_s, connect_timeout=10, max_pool_connections=max_pool_connections))


@contextlib.contextmanager
def bedrock_failures(fail: Fail, *, model_id: str, timeout_s: float, max_retries: int,
                     invalid_hint: str = "") -> Iterator[None]:
    """Turn what a ``bedrock-runtime`` call raises inside the block into ``fail(...)``, after
    botocore's own retries. Messages name the error code and the model id, never the error
    body's text (a validation message can quote the request); ``invalid_hint`` is what the
    caller knows a ValidationException usually means."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectTimeoutError,
        NoCredentialsError,
        ParamValidationError,
        ReadTimeoutError,
    )

    try:
        yield
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "") or "an error"
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        answered = f"Bedrock answered {code} (HTTP {status})"
        if code in _THROTTLED:
            raise fail(f"{answered} after {max_retries} retries", "rate_limited", status) from exc
        if code == "AccessDeniedException":
            raise fail(f"{answered}: this role may not invoke {model_id}, or model access is "
                       "not enabled for it in this region", "credentials", status) from exc
        if code in _NO_CREDENTIALS:
            raise fail(f"{answered}: the AWS credentials were refused", "credentials",
                       status) from exc
        if code == "ResourceNotFoundException":
            raise fail(f"{answered}: no model {model_id} in this region (check the model id "
                       "or inference profile)", "not_found", status) from exc
        if code == "ModelTimeoutException":
            raise fail(f"{answered}: the model did not finish in time", "timeout", status) from exc
        if code == "ValidationException":
            hint = f" ({invalid_hint})" if invalid_hint else ""
            raise fail(f"{answered}: the request was refused for {model_id}{hint}", "client",
                       status) from exc
        raise fail(f"{answered} (retries: {max_retries})", "http_error", status) from exc
    except NoCredentialsError as exc:
        raise fail("no AWS credentials", "credentials") from exc
    except ParamValidationError as exc:  # refused by botocore before sending
        raise fail(f"the request for {model_id} is not valid for this botocore",
                   "client") from exc
    except (ReadTimeoutError, ConnectTimeoutError) as exc:
        raise fail(f"no answer within {timeout_s:g} s (retries: {max_retries})", "timeout") from exc
    except BotoCoreError as exc:
        raise fail(f"endpoint unreachable ({type(exc).__name__}, retries: {max_retries})",
                   "connection") from exc


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema in the strict structured-output subset: every object closed
    and all its properties required (optional ones stay nullable)."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key in _STRICT_UNSUPPORTED:
                continue
            if key in ("properties", "$defs"):  # mappings of names, not schema keywords
                out[key] = {name: walk(sub) for name, sub in value.items()}
            else:
                out[key] = walk(value)
        if out.get("type") == "object" and "properties" in out:
            out["additionalProperties"] = False
            out["required"] = list(out["properties"])
        return out

    return walk(model.model_json_schema())


T = TypeVar("T")


class Lazy(Generic[T]):
    """A client built on first use, once per process even under concurrent first calls
    (never at import: tests and warm Lambda containers both rely on that)."""

    def __init__(self, factory: Callable[[], T], value: T | None = None) -> None:
        self._factory = factory
        self._value = value
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        return self._value is not None

    def get(self) -> T:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._factory()
        return self._value
