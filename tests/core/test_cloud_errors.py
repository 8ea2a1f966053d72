"""``fullserver.cloud_errors``: every error class of every cloud SDK fullserver calls is one line
naming the variable or file at fault and what to do, and carries no secret."""

from __future__ import annotations

import errno
import inspect
import string
from types import ModuleType
from typing import Any

import botocore.exceptions
import google.auth.exceptions
import pytest
import requests
import requests.exceptions

from fullserver.cloud_errors import ANSWERS, one_line, scrub
from fullserver.errors import EXIT_INPUT

SDK_BASES: list[tuple[ModuleType, tuple[type[BaseException], ...]]] = [
    (botocore.exceptions, (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError)),
    (google.auth.exceptions, (google.auth.exceptions.GoogleAuthError,)),
    (requests.exceptions, (requests.exceptions.RequestException,)),
]


def sdk_classes() -> list[type[BaseException]]:
    """Every exception class the three SDKs define, found by reading their modules."""
    return [
        cls
        for module, bases in SDK_BASES
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__ and issubclass(cls, bases)
    ]


def instance(cls: type[BaseException]) -> BaseException:
    """An instance as the SDK raises it: botocore's from its ``fmt`` fields, a ClientError from an
    error body, requests' with a request (and a 403 response for an HTTPError)."""
    if issubclass(cls, botocore.exceptions.ClientError):
        return cls({"Error": {"Code": "AccessDenied", "Message": "not allowed"}}, "GetServiceQuota")
    if issubclass(cls, botocore.exceptions.BotoCoreError):
        names = [f for _, f, _, _ in string.Formatter().parse(cls.fmt) if f]  # type: ignore[attr-defined]
        if issubclass(cls, botocore.exceptions.WaiterError):  # positional, as the waiter raises it
            return cls("InstanceRunning", "Max attempts exceeded", {})
        return cls(**{name: f"<{name}>" for name in names})
    if issubclass(cls, requests.exceptions.RequestException):
        response = requests.Response()
        response.status_code, response.reason = 403, "Forbidden"
        response.url = "https://compute.googleapis.com/compute/v1/projects/p?key=sk9f8e"
        request = requests.Request("GET", response.url).prepare()
        args = ("it failed", "{", 0) if issubclass(cls, ValueError) else ("it failed",)  # JSONDecodeError
        return cls(*args, request=request, response=response)
    return cls("it failed")


@pytest.mark.parametrize("cls", sdk_classes(), ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_every_sdk_error_class_is_one_line_with_the_input_exit_code(cls: type[BaseException]) -> None:
    error = one_line(instance(cls))
    assert error is not None, f"{cls.__module__}.{cls.__name__} has no answer"
    line = error.line()
    assert error.exit_code == EXIT_INPUT
    assert "\n" not in line and "sk9f8e" not in line and ": ?" not in line
    assert error.where and error.what and error.hint


def test_the_table_names_only_classes_that_exist() -> None:
    modules: dict[str, Any] = {m.__name__: m for m, _ in SDK_BASES}
    modules["urllib3.exceptions"] = __import__("urllib3.exceptions", fromlist=["HTTPError"])
    for module, name in ANSWERS:
        assert isinstance(getattr(modules[module], name, None), type), f"{module}.{name}"


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            botocore.exceptions.ProfileNotFound(profile="nope"),
            "AWS_PROFILE: names the profile 'nope', which no AWS config or credentials file defines "
            "(aws configure list-profiles lists them: set AWS_PROFILE to one, or unset it)",
        ),
        (
            botocore.exceptions.PartialCredentialsError(provider="env", cred_var="AWS_SECRET_ACCESS_KEY"),
            "AWS_SECRET_ACCESS_KEY: is missing: the AWS credentials in env are incomplete "
            "(set AWS_SECRET_ACCESS_KEY too, or unset AWS_ACCESS_KEY_ID and use AWS_PROFILE)",
        ),
        (
            botocore.exceptions.ConfigParseError(path="/tmp/config.bin"),
            "/tmp/config.bin: is not an AWS config file (an INI file) botocore can parse "
            "(fix it, or point AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE at your own files)",
        ),
        (
            botocore.exceptions.ProxyConnectionError(proxy_url="http://user:pw@proxy.corp:3128", error="refused"),
            "HTTPS_PROXY: the proxy proxy.corp:3128 could not be reached "
            "(fix or unset HTTPS_PROXY (and HTTP_PROXY), or list the cloud's endpoints in NO_PROXY)",
        ),
        (
            botocore.exceptions.ClientError(
                {"Error": {"Code": "UnauthorizedOperation", "Message": "no"}}, "DescribeSpotPriceHistory"
            ),
            "AWS DescribeSpotPriceHistory: answered UnauthorizedOperation: no (the credentials (AWS_PROFILE or "
            "AWS_ACCESS_KEY_ID) are expired or not allowed DescribeSpotPriceHistory: log in again, or use a role "
            "that is)",
        ),
        (
            google.auth.exceptions.RefreshError("invalid_grant: Bad Request"),  # type: ignore[no-untyped-call]
            "Application Default Credentials: could not be refreshed (invalid_grant: Bad Request) "
            "(run gcloud auth application-default login again)",
        ),
    ],
)
def test_the_line_names_the_variable_or_file_and_what_to_do(exc: BaseException, expected: str) -> None:
    error = one_line(exc)
    assert error is not None and error.line() == expected


def test_a_path_that_loops_or_is_missing_is_named_with_what_the_system_said() -> None:
    loop = OSError(errno.ELOOP, "Too many levels of symbolic links", "/home/me/.aws/config")
    error = one_line(loop)
    assert error is not None and error.line().startswith(
        "/home/me/.aws/config: Too many levels of symbolic links (fix the path, or the variable that names it"
    )
    assert one_line(OSError(errno.ENOENT, "No such file or directory")) is None  # no path: not ours to name


def test_anything_else_stays_a_bug() -> None:
    assert one_line(KeyError("x")) is None
    assert one_line(ValueError("bad")) is None
    assert one_line(BrokenPipeError(errno.EPIPE, "Broken pipe")) is None


def test_scrub_drops_user_info_and_queries_that_may_hold_keys() -> None:
    text = "GET https://u:pw@example.com/v1/x?key=sk9f8e failed; proxy http://a:b@p:8080 down"
    assert scrub(text) == "GET https://example.com/v1/x failed; proxy http://p:8080 down"
    assert len(scrub("x" * 1000)) == 300
