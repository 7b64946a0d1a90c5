"""Who may do what on a live server: bearer tokens, roles, tenants and their queue subtrees.

A token is ``mwt_<id>_<secret>``: the id is a public lookup key, the secret 32 random bytes
(``secrets.token_urlsafe``). The store keeps only the id and the SHA-256 of the whole token (a slow
password hash buys nothing for 256 random bits), so a leaked database or log holds no usable token;
the comparison is constant-time. The token itself is printed once, by ``makeway token create``.

Roles (docs/tenants.md):

* ``admin``: everything.
* ``tenant-admin``: its tenant's jobs, and the quotas of the queues *below* its tenant's subtree
  roots, never above the guaranteed/max the admin set on the root.
* ``user``: submits to its tenant's queues, sees and cancels its own jobs, sees queue-level figures.
* ``agent``: the agent endpoints only (an agent machine holds no user's rights).

A tenant owns the queue subtrees its cluster config lists (``tenants: {team-a: {queues: [a]}}``),
as a YuniKorn queue ACL covers a queue and its children. A server with no token at all is open to
local users only: every request acts as the admin ``local``, and ``serve`` refuses a non-loopback
host.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from makeway.config import TENANT_NAME, ClusterConfig
from makeway.errors import MakewayError

ROLES = ("admin", "tenant-admin", "user", "agent")
TENANT_ROLES = ("tenant-admin", "user")
PREFIX = "mwt_"
_TOKEN = re.compile(r"^mwt_([0-9a-f]{12})_[A-Za-z0-9_-]{43}$")
TOKEN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,63}$")
LOOPBACK = ("127.0.0.1", "::1", "localhost")


class AuthError(MakewayError):
    """A token request that cannot be honoured (bad role, tenant or name); the message names the field."""


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    role: str
    tenant: Optional[str] = None

    @property
    def admin(self) -> bool:
        return self.role == "admin"

    @property
    def scope(self) -> str:
        """The namespace of its idempotency keys."""
        return self.tenant or "default"


LOCAL = Principal("local", "admin", None)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_id(token: str) -> Optional[str]:
    """The lookup id of a well-formed token, else None."""
    m = _TOKEN.match(token)
    return m.group(1) if m else None


def new_token() -> tuple[str, str, str]:
    """A fresh token: (token, its id, its hash). Only the id and the hash are ever stored."""
    tid = secrets.token_hex(6)
    token = f"{PREFIX}{tid}_{secrets.token_urlsafe(32)}"
    return token, tid, hash_token(token)


def check_grant(role: str, tenant: Optional[str], name: Optional[str] = None,
                cfg: Optional[ClusterConfig] = None) -> None:
    """Refuse a role/tenant/name that cannot make a token, naming the option."""
    if role not in ROLES:
        raise AuthError(f"--role: {role!r} is not one of {', '.join(ROLES)}")
    if role in TENANT_ROLES and not tenant:
        raise AuthError(f"--tenant: a {role} token belongs to a tenant; name it")
    if role not in TENANT_ROLES and tenant:
        raise AuthError(f"--tenant: an {role} token belongs to no tenant")
    if tenant is not None and not TENANT_NAME.match(tenant):
        raise AuthError(f"--tenant: {tenant!r} is not a tenant name (letters, digits and ._-, at most 64)")
    if tenant is not None and cfg is not None and tenant not in cfg.tenants:
        known = ", ".join(cfg.tenants) or "none declared"
        raise AuthError(f"--tenant: {tenant!r} is not a tenant of the config (tenants: {known})")
    if name is not None and not TOKEN_NAME.match(name):
        raise AuthError(f"--name: {name!r} is not a token name (letters, digits and ._@:-, at most 64)")


def create_token(store: Any, role: str, tenant: Optional[str] = None, name: Optional[str] = None,
                 cfg: Optional[ClusterConfig] = None, *, by: str = "cli") -> tuple[str, dict[str, Any]]:
    """Store a new token's hash and audit it; (the token, to show once; its row without the hash)."""
    check_grant(role, tenant, name, cfg)
    token, tid, digest = new_token()
    name = name or f"{role}-{tid}"
    now = time.time()
    store.add_token(tid, digest, name, role, tenant, now)
    store.add_audit({"at": now, "who": by, "role": "admin", "tenant": None, "action": "token.create",
                     "target": f"token:{name}", "target_tenant": tenant, "outcome": "ok", "status": 0,
                     "details": {"id": tid, "role": role}})
    return token, {"id": tid, "name": name, "role": role, "tenant": tenant, "created": now, "revoked": None}


class Tenancy:
    """Which tenant owns a queue, and the subtree root whose quota bounds it (from the config)."""

    def __init__(self, cfg: ClusterConfig):
        self.cfg = cfg
        self.root_of: dict[str, str] = {}
        self.owner: dict[str, str] = {}
        children: dict[str, list[str]] = {}
        for q, spec in cfg.queues.items():
            if spec.parent is not None:
                children.setdefault(spec.parent, []).append(q)
        for tname, t in cfg.tenants.items():
            for root in t.queues:
                todo = [root]
                while todo:
                    q = todo.pop()
                    self.root_of[q], self.owner[q] = root, tname
                    todo.extend(children.get(q, ()))

    def tenant_of(self, queue: str) -> Optional[str]:
        return self.owner.get(queue)

    def job_tenant(self, queue: str) -> str:
        """The tenant a job in ``queue`` belongs to ("default" outside every tenant's subtree)."""
        return self.owner.get(queue, "default")


# -- decisions ------------------------------------------------------------------------------------

def sees_job(p: Principal, tenancy: Tenancy, queue: str, user: Optional[str]) -> bool:
    """Whether ``p`` may know the job exists (the others get 404, so ids do not leak)."""
    if p.admin:
        return True
    if p.role not in TENANT_ROLES or tenancy.tenant_of(queue) != p.tenant:
        return False
    return p.role == "tenant-admin" or user == p.name


def may_cancel(p: Principal, tenancy: Tenancy, queue: str, user: Optional[str]) -> bool:
    return sees_job(p, tenancy, queue, user)


def may_preempt(p: Principal, tenancy: Tenancy, queue: str) -> bool:
    """A manual preemption stops someone's running work: admins, and a tenant admin within its tenant."""
    return p.admin or (p.role == "tenant-admin" and tenancy.tenant_of(queue) == p.tenant)


def submit_problem(p: Principal, tenancy: Tenancy, queue: str, user: Optional[str]) -> Optional[tuple[str, str]]:
    """Why ``p`` may not submit this job, as (field, message); None when it may."""
    if p.admin:
        return None
    if p.role not in TENANT_ROLES:
        return "role", f"role: a {p.role} token cannot submit jobs"
    if tenancy.tenant_of(queue) != p.tenant:
        return "queue", f"queue: {queue!r} is not a queue of tenant {p.tenant!r}"
    if p.role == "user" and user is not None and user != p.name:
        return "user", f"user: a user token submits as itself ({p.name!r}), not as {user!r}"
    return None


def quota_problem(p: Principal, tenancy: Tenancy, queue: str, new: Mapping[str, Any],
                  root_limits: Callable[[str], tuple[Optional[dict], Optional[dict]]]) -> Optional[str]:
    """Why ``p`` may not give ``queue`` the guaranteed/max in ``new`` (values after the change); None if
    it may. A tenant admin changes queues strictly below its subtree roots, and no value may exceed
    what the admin set on the root: a guarantee stays within the root's guarantee (or its max when
    it has none), a max within the root's max; dropping a limit the root has is raising it."""
    if p.admin:
        return None
    if p.role != "tenant-admin":
        return f"queue: a {p.role} token cannot change quotas"
    if tenancy.tenant_of(queue) != p.tenant:
        return f"queue: {queue!r} is not in the subtree of tenant {p.tenant!r}"
    root = tenancy.root_of[queue]
    if queue == root:
        return f"queue: {queue!r} is the root of tenant {p.tenant!r}'s subtree; its limits are the admin's"
    r_guar, r_max = root_limits(root)
    for field, bound in (("guaranteed", _merge(r_guar, r_max)), ("max", r_max)):
        if field not in new or not bound:
            continue
        value = new[field]
        for res, limit in sorted(bound.items()):
            v = (value or {}).get(res, 0 if field == "guaranteed" and value is not None else None)
            if v is None:
                return f"{field}.{res}: unlimited is above the admin's limit {limit} on {root!r}"
            if v > limit:
                return f"{field}.{res}: {v} is above the admin's limit {limit} on {root!r}"
    return None


def _merge(guar: Optional[dict], max_: Optional[dict]) -> dict:
    out = dict(max_ or {})
    out.update(guar or {})
    return out


# -- authentication ---------------------------------------------------------------------------------

class Authenticator:
    """Turns an ``Authorization`` header into a ``Principal``, or says why not.

    With no token in the store the server is open (``LOCAL`` for everyone: ``serve`` keeps it on
    loopback). Looked-up tokens are cached for ``ttl`` seconds, so a revocation, or the first
    token created beside a running open server, takes effect within that time.
    """

    def __init__(self, store: Any, *, ttl: float = 1.0, clock: Callable[[], float] = time.monotonic,
                 extra: Optional[Mapping[str, Principal]] = None):
        self.store = store
        self.ttl = ttl
        self.clock = clock
        self._extra = {hash_token(t): p for t, p in (extra or {}).items()}
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, Principal, str]] = {}
        self._open_until = -1.0
        self._closed = False

    def add_secret(self, token: str, principal: Principal) -> None:
        """An in-memory credential never written anywhere (the server's own local agents)."""
        self._extra[hash_token(token)] = principal

    def forget(self) -> None:
        with self._lock:
            self._cache.clear()
            self._open_until = -1.0

    def is_open(self) -> bool:
        if self._closed:
            return False
        now = self.clock()
        if now < self._open_until:
            return True
        if self.store.has_tokens():
            self._closed = True  # tokens never go away (revoked ones stay): no way back to open
            return False
        self._open_until = now + self.ttl
        return True

    def needs_store(self, header: Optional[str]) -> bool:
        """Whether ``authenticate(header)`` may read the store (an async caller runs it in a thread then)."""
        now = self.clock()
        if not self._closed:
            return now >= self._open_until
        tid = token_id(header.strip().partition(" ")[2].strip()) if header else None
        if tid is None:
            return False
        hit = self._cache.get(tid)
        return hit is None or hit[0] <= now

    def authenticate(self, header: Optional[str]) -> tuple[Optional[Principal], str]:
        """(principal, "") or (None, why) for a 401. An open server takes any header as ``LOCAL``."""
        token = ""
        if header:
            scheme, _, token = header.strip().partition(" ")
            token = token.strip() if scheme.lower() == "bearer" else ""
        if token:
            digest = hash_token(token)
            for known, p in self._extra.items():
                if hmac.compare_digest(known, digest):
                    return p, ""
        if self.is_open():
            return LOCAL, ""
        if not header:
            return None, "a bearer token is required (Authorization: Bearer <token>)"
        if not token:
            return None, "the Authorization header must be 'Bearer <token>'"
        tid = token_id(token)
        if tid is None:
            return None, "not a makeway token"
        now = self.clock()
        with self._lock:
            hit = self._cache.get(tid)
        if hit is None or hit[0] <= now:
            row = self.store.token(tid)
            if row is None or row["revoked"] is not None:
                return None, "unknown or revoked token"
            hit = (now + self.ttl, Principal(row["name"], row["role"], row["tenant"]), row["hash"])
            with self._lock:
                if len(self._cache) > 10000:
                    self._cache.clear()
                self._cache[tid] = hit
        if not hmac.compare_digest(hit[2], digest):
            return None, "unknown or revoked token"
        return hit[1], ""


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


__all__ = ["AuthError", "Authenticator", "LOCAL", "Principal", "ROLES", "Tenancy", "check_grant", "create_token",
           "hash_token", "is_loopback", "may_cancel", "may_preempt", "new_token", "quota_problem", "sees_job",
           "submit_problem", "token_id"]
