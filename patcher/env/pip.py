"""The host's pip settings that make sense in the setup container: pip.conf text and the CA bundle.

Read from pip's config files (global, then user, then PIP_CONFIG_FILE) and PIP_* variables; EnvConfig
overrides them. file:// indexes are dropped (they are the host's paths). The container reaches the
indexes only through the host's allowlisting proxy (egress.py), so pip's `proxy` is that proxy, and index
URLs lose their userinfo: credentials never enter the container. The proxy adds them instead, to the
requests for that index's host and port only (`index_credentials`: the URL's userinfo, else netrc).
"""

from __future__ import annotations

import base64
import configparser
import netrc
import os
from contextlib import suppress
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from patcher.env.config import EnvConfig
from patcher.env.egress import PORT_IN_BOX
from patcher.env.plan import SETUP_DIR

PIP_KEYS = ("index-url", "extra-index-url", "trusted-host", "cert", "timeout", "proxy")
DEFAULT_CA = Path("/etc/ssl/certs/ca-certificates.crt")


def pip_settings(config: EnvConfig) -> tuple[str, bytes, list[str]]:
    """(pip.conf for the setup container, CA bundle, the index URLs it names, with any credentials)."""
    host = host_pip()
    values = {k: v for k, v in host.items() if k in ("timeout", "index-url")}
    if config.index_url:
        values["index-url"] = config.index_url
    for key, override in (("extra-index-url", config.extra_index_urls), ("trusted-host", config.trusted_hosts)):
        items = [i for i in (host.get(key, "").split() if override is None else override)
                 if not i.startswith("file:")]  # file:// indexes are the host's paths
        if items:
            values[key] = " ".join(items)
    candidates = [config.ca_bundle, host.get("cert"), os.environ.get("REQUESTS_CA_BUNDLE"),
                  os.environ.get("SSL_CERT_FILE"), DEFAULT_CA]
    ca = next((Path(c) for c in candidates if c and Path(c).is_file()), None)
    if ca:
        values["cert"] = f"{SETUP_DIR}/ca.pem"
    indexes = [values.get("index-url", "https://pypi.org/simple"), *values.get("extra-index-url", "").split()]
    for key in ("index-url", "extra-index-url"):
        if key in values:
            values[key] = " ".join(scrub(url) for url in values[key].split())
    values["proxy"] = f"http://127.0.0.1:{PORT_IN_BOX}"
    text = "[global]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())
    return text, ca.read_bytes() if ca else b"", indexes


def index_credentials(indexes: list[str]) -> dict[tuple[str, int], str]:
    """(host, port) -> the Authorization header value the host's proxy adds for that index host only: from
    the URL's userinfo (pip's configuration, EnvConfig) or else the host's netrc (NETRC or ~/.netrc)."""
    found: dict[tuple[str, int], str] = {}
    for url in indexes:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            continue
        where = (parts.hostname.lower(), parts.port or (443 if parts.scheme == "https" else 80))
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        if not (user or password):
            user, password = _netrc(parts.hostname)
        if user or password:
            found.setdefault(where, "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    return found


def index_secrets(indexes: list[str]) -> list[str]:
    """The passwords (and whole userinfo) of the index credentials, for redaction."""
    out = []
    for url in indexes:
        parts = urlsplit(url)
        if parts.hostname:
            user, password = (unquote(parts.username or ""), unquote(parts.password or "")) \
                if parts.username or parts.password else _netrc(parts.hostname)
            out += [v for v in (password, parts.password or "", f"{user}:{password}") if v and v != ":"]
    return out


def _netrc(host: str) -> tuple[str, str]:
    path = os.environ.get("NETRC") or str(Path.home() / ".netrc")
    with suppress(OSError, netrc.NetrcParseError):
        entry = netrc.netrc(path).authenticators(host)
        if entry:
            return entry[0] or "", entry[2] or ""
    return "", ""


def scrub(url: str) -> str:
    """The URL without its userinfo."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def host_pip() -> dict[str, str]:
    parser = configparser.RawConfigParser()
    dirs = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    files = [Path("/etc/pip.conf"), *(Path(d) / "pip" / "pip.conf" for d in dirs),
             Path.home() / ".pip" / "pip.conf", Path.home() / ".config" / "pip" / "pip.conf"]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    with suppress(configparser.Error):
        parser.read([f for f in files if f.is_file()])
    values = {}
    for section in ("global", "install"):
        if parser.has_section(section):
            values.update({k: v for k, v in parser.items(section) if k in PIP_KEYS})
    for key in PIP_KEYS:
        value = os.environ.get("PIP_" + key.upper().replace("-", "_"))
        if value:
            values[key] = value
    return values
