"""Bearer tokens and roles.

Tokens file: one `TOKEN ROLE USER` line each (`#` starts a comment). `user` may submit and
act on its own jobs only; `operator` may do everything, including clock control. Without a
tokens file the daemon trusts every caller as an operator (it listens on 127.0.0.1 by
default).

MQTT has no tokens: a command's user is the `<user>` level of its topic
(`schedd/<cluster>/cmd/<user>/<command>`), which the broker's ACL lets only that broker
user publish to (docs/mqtt.md). `principal_of_user` maps it to the same principal as the
user's tokens.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path

ROLES = ("user", "operator")
# Characters a user name cannot have to be a topic level (and a Mosquitto ACL %u).
TOPIC_UNSAFE = frozenset("/+#\0")
OPERATOR_ONLY = frozenset({"AdvanceClock", "Pause", "Resume"})


class TokenFileError(ValueError):
    """A tokens file that cannot be used; names file and line."""


@dataclass(frozen=True)
class Principal:
    user: str
    role: str

    @property
    def operator(self) -> bool:
        return self.role == "operator"

    def may_act_on(self, owner: str) -> bool:
        return self.operator or owner == self.user


ANONYMOUS_OPERATOR = Principal("operator", "operator")


class TokenStore:
    def __init__(self, tokens: dict[str, Principal] | None):
        self._tokens = tokens  # None: authentication is off

    @property
    def enabled(self) -> bool:
        return self._tokens is not None

    @classmethod
    def from_file(cls, path: str | Path) -> TokenStore:
        tokens: dict[str, Principal] = {}
        try:
            lines = Path(path).read_text().splitlines()
        except OSError as err:
            raise TokenFileError(f"cannot read tokens file {path}: {err.strerror}") from None
        for number, line in enumerate(lines, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) != 3:
                raise TokenFileError(f"{path}:{number}: expected 'TOKEN ROLE USER', got "
                                     f"{len(words)} field(s)")
            token, role, user = words
            if role not in ROLES:
                raise TokenFileError(f"{path}:{number}: role must be user or operator, not "
                                     f"{role!r}")
            if token in tokens:
                raise TokenFileError(f"{path}:{number}: this token is listed twice")
            tokens[token] = Principal(user, role)
        if not tokens:
            raise TokenFileError(f"tokens file {path} lists no token")
        return cls(tokens)

    def principal_of_user(self, user: str) -> Principal | None:
        """The principal of an MQTT command published under `user` (the topic's user
        level), or None if that user has no token or cannot be a topic level.

        Without a tokens file every caller is an operator, as over gRPC, under its own
        name. A user listed with both roles gets the lesser one: the broker password is
        not the operator token.
        """
        if not user or any(c in TOPIC_UNSAFE for c in user):
            return None
        if self._tokens is None:
            return Principal(user, "operator")
        roles = {p.role for p in self._tokens.values() if p.user == user}
        if not roles:
            return None
        return Principal(user, "operator" if roles == {"operator"} else "user")

    def authenticate(self, authorization: str | None) -> Principal | None:
        """The principal of an `authorization: Bearer TOKEN` header, or None."""
        if self._tokens is None:
            return ANONYMOUS_OPERATOR
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        for known, principal in self._tokens.items():  # constant time per comparison
            if hmac.compare_digest(known.encode(), token.strip().encode()):
                return principal
        return None
