"""Cloud SDK errors as one line: the variable or file at fault, what is wrong, what to do.

Why: the commands that read a cloud with the caller's credentials (``quota``, ``ephemeral``'s quota
check, ``catalog refresh --provider aws-spot/aws-types``) met botocore, google-auth and requests
errors as tracebacks (exit 1): ``AWS_PROFILE`` naming no profile, a binary ``AWS_CONFIG_FILE``, a
key without its secret, an unreachable proxy. The command line passes every uncaught exception
through ``one_line`` once (``fullserver_cli.app``), so no command handles them on its own.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Mapping
from dataclasses import dataclass

from fullserver.errors import EXIT_INPUT, FullserverError


class CloudAccessError(FullserverError):
    """A cloud could not be read with the caller's credentials and settings; nothing was changed."""

    exit_code = EXIT_INPUT


@dataclass(frozen=True)
class Answer:
    """Templates (``str.format`` over ``fields``) of the error line's three parts."""

    where: str
    what: str
    hint: str


_AWS_LOGIN = "export AWS_PROFILE (aws configure, or aws sso login), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
_AWS_NET = "check the network; HTTPS_PROXY, NO_PROXY and AWS_ENDPOINT_URL if set"
_GCP_LOGIN = "run gcloud auth application-default login, or point GOOGLE_APPLICATION_CREDENTIALS at a key file"
_GCP_NET = "check the network; HTTPS_PROXY and NO_PROXY if set"
_PROXY = "fix or unset HTTPS_PROXY (and HTTP_PROXY), or list the cloud's endpoints in NO_PROXY"
_CA = "set AWS_CA_BUNDLE or REQUESTS_CA_BUNDLE to the CA that signs your proxy's certificates"

_BOTO = "botocore.exceptions"
_GAUTH = "google.auth.exceptions"
_REQ = "requests.exceptions"

ANSWERS: dict[tuple[str, str], Answer] = {
    # botocore (https://github.com/boto/botocore/blob/develop/botocore/exceptions.py: each class's fmt)
    (_BOTO, "ProfileNotFound"): Answer(
        "AWS_PROFILE",
        "names the profile '{profile}', which no AWS config or credentials file defines",
        "aws configure list-profiles lists them: set AWS_PROFILE to one, or unset it",
    ),
    (_BOTO, "ConfigNotFound"): Answer(
        "AWS_CONFIG_FILE", "'{path}' does not exist", "point AWS_CONFIG_FILE at your AWS config file, or unset it"
    ),
    (_BOTO, "ConfigParseError"): Answer(
        "{path}",
        "is not an AWS config file (an INI file) botocore can parse",
        "fix it, or point AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE at your own files",
    ),
    (_BOTO, "InvalidConfigError"): Answer(
        "AWS config", "{exc}", "fix the profile in the file AWS_CONFIG_FILE names (default ~/.aws/config)"
    ),
    (_BOTO, "PartialCredentialsError"): Answer(
        "{cred_var}",
        "is missing: the AWS credentials in {provider} are incomplete",
        "set {cred_var} too, or unset AWS_ACCESS_KEY_ID and use AWS_PROFILE",
    ),
    (_BOTO, "NoCredentialsError"): Answer(
        "AWS credentials", "none found (environment, AWS_PROFILE, ~/.aws, instance role)", _AWS_LOGIN
    ),
    (_BOTO, "NoRegionError"): Answer(
        "AWS_REGION", "no region is set", "export AWS_REGION, or set region in the profile"
    ),
    (_BOTO, "CredentialRetrievalError"): Answer(
        "AWS credentials", "could not be obtained from {provider}: {error_msg}", _AWS_LOGIN
    ),
    (_BOTO, "TokenRetrievalError"): Answer("AWS credentials", "no token from {provider}: {error_msg}", _AWS_LOGIN),
    (_BOTO, "SSOError"): Answer("AWS SSO", "{exc}", "run aws sso login for the profile AWS_PROFILE names"),
    (_BOTO, "LoginError"): Answer("AWS login", "{exc}", "run aws login again for the profile AWS_PROFILE names"),
    (_BOTO, "NoAuthTokenError"): Answer("AWS credentials", "{exc}", _AWS_LOGIN),
    (_BOTO, "MetadataRetrievalError"): Answer("AWS instance role", "{exc}", _AWS_LOGIN),
    (_BOTO, "RefreshWithMFAUnsupportedError"): Answer(
        "AWS credentials", "{exc}", "log in again with your MFA code (aws sts get-session-token), then retry"
    ),
    (_BOTO, "UnknownCredentialError"): Answer("AWS_PROFILE", "{exc}", "fix credential_process or the profile's keys"),
    (_BOTO, "ProxyConnectionError"): Answer("HTTPS_PROXY", "the proxy {proxy_url} could not be reached", _PROXY),
    (_BOTO, "SSLError"): Answer("{endpoint_url}", "TLS verification failed", _CA),
    (_BOTO, "ConnectTimeoutError"): Answer("{endpoint_url}", "the connection timed out", _AWS_NET),
    (_BOTO, "ReadTimeoutError"): Answer("{endpoint_url}", "no answer in time", "retry; " + _AWS_NET),
    (_BOTO, "EndpointConnectionError"): Answer("{endpoint_url}", "could not be reached", _AWS_NET),
    (_BOTO, "ConnectionError"): Answer("AWS API", "could not be reached ({exc})", _AWS_NET),
    (_BOTO, "HTTPClientError"): Answer("AWS API", "the connection failed ({exc})", _AWS_NET),
    (_BOTO, "ClientError"): Answer("AWS {operation}", "answered {code}: {message}", "{advice}"),
    (_BOTO, "BotoCoreError"): Answer("AWS client", "{exc}", "check AWS_PROFILE, AWS_CONFIG_FILE and AWS_REGION"),
    # google-auth (https://github.com/googleapis/google-auth-library-python: google/auth/exceptions.py)
    (_GAUTH, "DefaultCredentialsError"): Answer("Application Default Credentials", "{exc}", _GCP_LOGIN),
    (_GAUTH, "MalformedError"): Answer(
        "GOOGLE_APPLICATION_CREDENTIALS", "the credentials file is malformed ({exc})", _GCP_LOGIN
    ),
    (_GAUTH, "RefreshError"): Answer(
        "Application Default Credentials",
        "could not be refreshed ({exc})",
        "run gcloud auth application-default login again",
    ),
    (_GAUTH, "TransportError"): Answer("Google's token endpoint", "could not be reached ({exc})", _GCP_NET),
    (_GAUTH, "MutualTLSChannelError"): Answer(
        "GOOGLE_API_USE_CLIENT_CERTIFICATE",
        "the mTLS channel failed ({exc})",
        "unset it, or fix the client certificate",
    ),
    (_GAUTH, "GoogleAuthError"): Answer("Google credentials", "{exc}", _GCP_LOGIN),
    # requests (https://github.com/psf/requests/blob/main/src/requests/exceptions.py)
    (_REQ, "ProxyError"): Answer("HTTPS_PROXY", "the proxy could not be reached ({exc})", _PROXY),
    (_REQ, "SSLError"): Answer("{url}", "TLS verification failed", _CA),
    (_REQ, "Timeout"): Answer("{url}", "no answer in time", "retry; " + _GCP_NET),
    (_REQ, "ConnectionError"): Answer("{url}", "could not be reached", _GCP_NET),
    (_REQ, "HTTPError"): Answer("{url}", "answered HTTP {status} {reason}", "{advice}"),
    (_REQ, "RequestException"): Answer("{url}", "the request failed ({exc})", _GCP_NET),
    ("urllib3.exceptions", "HTTPError"): Answer("HTTP", "the connection failed ({exc})", _GCP_NET),
}

_PATH_ERRNOS = frozenset(
    {errno.ELOOP, errno.ENOENT, errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENOTDIR, errno.ENAMETOOLONG}
)
"""An ``OSError`` on a path the caller named (a config file, often through a variable)."""
_PATH = Answer(
    "{filename}",
    "{strerror}",
    "fix the path, or the variable that names it (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, "
    "GOOGLE_APPLICATION_CREDENTIALS, KUBECONFIG)",
)

CREDENTIAL_CODES = frozenset(
    {
        "AuthFailure",
        "UnauthorizedOperation",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
        "RequestExpired",
        "SignatureDoesNotMatch",
        "OptInRequired",
    }
)
"""AWS error codes that mean the credentials, not the request, are at fault (``AccessDenied*`` too)."""


def one_line(exc: BaseException) -> CloudAccessError | None:
    """The one-line error for a cloud SDK's exception (or a path's ``OSError``); ``None`` for any
    other exception, which stays a bug."""
    if isinstance(exc, OSError) and exc.filename and exc.errno in _PATH_ERRNOS and _module(type(exc)) == "builtins":
        return _made(_PATH, {"filename": str(exc.filename), "strerror": exc.strerror or str(exc)})
    for cls in type(exc).__mro__:
        answer = ANSWERS.get((_module(cls), cls.__name__))
        if answer is not None:
            return _made(answer, fields(exc))
    return None


def _module(cls: type) -> str:
    return cls.__module__


def _made(answer: Answer, values: Mapping[str, str]) -> CloudAccessError:
    view = _Fields(values)
    return CloudAccessError(answer.where.format_map(view), answer.what.format_map(view), answer.hint.format_map(view))


class _Fields(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def fields(exc: BaseException) -> dict[str, str]:
    """What the templates may name: ``exc`` (its text, scrubbed), botocore's ``kwargs``, and a
    response's ``code``/``message``/``operation`` (AWS) or ``url``/``status``/``reason`` (HTTP)."""
    found = {"exc": scrub(str(exc)) or type(exc).__name__, "type": type(exc).__name__}
    kwargs = getattr(exc, "kwargs", None)
    if isinstance(kwargs, dict):
        found.update({k: scrub(str(v)) for k, v in kwargs.items()})
        if "proxy_url" in found:  # botocore masks the user info its own way (``htt***://***:p@``)
            found["proxy_url"] = found["proxy_url"].rpartition("@")[2].rpartition("://")[2]
    response = getattr(exc, "response", None)
    if isinstance(response, dict):  # botocore's ClientError: the parsed error body
        error = response.get("Error", {})
        code = str(error.get("Code", "?"))
        found.update(code=code, message=scrub(str(error.get("Message", ""))))
        found["operation"] = str(getattr(exc, "operation_name", "") or "API")
        found["advice"] = _aws_advice(code, found["operation"])
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None) or getattr(response, "url", None)
    found["url"] = scrub(str(url)) if url else "the cloud API"
    status = getattr(response, "status_code", None)
    if status is not None:  # requests' HTTPError
        found.update(status=str(status), reason=str(getattr(response, "reason", "") or ""))
        found["advice"] = _http_advice(int(status))
    return found


def _aws_advice(code: str, operation: str) -> str:
    if code in CREDENTIAL_CODES or code.startswith("AccessDenied"):
        return f"the credentials (AWS_PROFILE or AWS_ACCESS_KEY_ID) are expired or not allowed {operation}: " + (
            "log in again, or use a role that is"
        )
    return "nothing was changed"


def _http_advice(status: int) -> str:
    if status in (401, 403):
        return "the credentials are not allowed this call, or the API is not enabled in the project: " + _GCP_LOGIN
    if status == 404:
        return "check gcp:project in the stack file: no such project, or the API is not enabled there"
    return "retry later; nothing was changed"


_USERINFO = re.compile(r"([^\s\"'/]*://)[^/\s\"']*@")
_QUERY = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s\"'?]*)\?[^\s\"']*")


def scrub(text: str) -> str:
    """``text`` without what a URL may carry that is secret: ``user:password@`` and the query (an
    API key is a query parameter); at most 300 characters of one line."""
    text = _QUERY.sub(r"\1", _USERINFO.sub(r"\1", text))
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."
